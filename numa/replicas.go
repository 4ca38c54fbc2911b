package numa

import (
	"fmt"
	"sync"
)

// Replicas holds one copy of read-only data per NUMA domain of a Pool, each
// copy in its domain's memory, so that workers read data local to them:
// worker w uses r.Get(w.Domain).
type Replicas[T any] struct {
	copies []T
}

// NewReplicas builds one copy per domain of p by calling build(d) on a
// pinned worker of domain d, all domains in parallel. The pages build
// allocates and writes first are thereby placed in domain d's memory
// (Linux first-touch policy), so build must allocate and fill its copy
// itself, deep-copying any shared source, rather than return shared slices.
// It returns the error of the lowest domain whose build failed.
func NewReplicas[T any](p *Pool, build func(domain int) (T, error)) (*Replicas[T], error) {
	copies := make([]T, p.Domains())
	errs := make([]error, len(copies))
	var wg sync.WaitGroup
	for d := range copies {
		wg.Go(func() {
			errs[d] = p.runOnDomain(d, func() error {
				var err error
				copies[d], err = build(d)
				return err
			})
		})
	}
	wg.Wait()
	for d, err := range errs {
		if err != nil {
			return nil, fmt.Errorf("build replica for domain %d: %w", d, err)
		}
	}
	return &Replicas[T]{copies: copies}, nil
}

// Get returns the copy of domain d, which must lie in [0, Len()).
func (r *Replicas[T]) Get(d int) T {
	return r.copies[d]
}

// Len returns the number of copies, one per domain of the pool.
func (r *Replicas[T]) Len() int {
	return len(r.copies)
}
