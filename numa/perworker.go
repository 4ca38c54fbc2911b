package numa

// PerWorker holds one value per worker of a pool: a trainer's scratch
// memory and statistics, written by one worker only, so no lock is needed.
// Each value is made by its worker the first time that worker asks for it,
// so that its memory is first touched, and so placed, in the worker's NUMA
// domain; workers that never ask allocate nothing.
type PerWorker[T any] struct {
	values []T
	made   []bool
	build  func(w Worker) T
}

// NewPerWorker returns room for one value per worker of p, each made by
// build when its worker first calls Get.
func NewPerWorker[T any](p *Pool, build func(w Worker) T) *PerWorker[T] {
	n := len(p.Workers())
	return &PerWorker[T]{values: make([]T, n), made: make([]bool, n), build: build}
}

// Get returns worker w's value, making it on first use. Only worker w may
// call Get(w), from the function the pool runs on it (or the caller of
// For, running as w: see Options.InlineSingle).
func (p *PerWorker[T]) Get(w Worker) T {
	if !p.made[w.ID] {
		p.values[w.ID], p.made[w.ID] = p.build(w), true
	}
	return p.values[w.ID]
}

// Each calls fn with every value made so far, in worker order: how a
// trainer sums its workers' statistics. Call it when no worker runs.
func (p *PerWorker[T]) Each(fn func(T)) {
	for i, v := range p.values {
		if p.made[i] {
			fn(v)
		}
	}
}
