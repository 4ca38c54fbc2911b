//go:build linux

package numa

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// threadCPUs returns the affinity of the calling thread, read with the fixed
// size unix.CPUSet rather than this package's own code.
func threadCPUs(t *testing.T) []int {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		t.Error(err)
		return nil
	}
	var cpus []int
	for cpu := range 1024 {
		if set.IsSet(cpu) {
			cpus = append(cpus, cpu)
		}
	}
	return cpus
}

// requirePinning skips the test where the OS refuses to pin threads at all,
// which is what a container without CAP_SYS_NICE on a restricted cpuset may
// do; NewPool then runs unpinned, as TestPoolPinRefused checks.
func requirePinning(t *testing.T, topo Topology) {
	t.Helper()
	errc := make(chan error)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread dies with the goroutine
		errc <- pinThread(topo.Domains[0].CPUs)
	}()
	if err := <-errc; err != nil {
		t.Skipf("OS refuses thread pinning: %v", err)
	}
}

// testTopologies returns the machine's topology and, on machines with two
// CPUs or more, a simulated split of it into two domains.
func testTopologies(t *testing.T) map[string]Topology {
	t.Helper()
	real, err := Detect()
	if err != nil {
		t.Fatal(err)
	}
	tops := map[string]Topology{"detected": real}
	if len(real.CPUs()) >= 2 {
		sim, err := real.Simulate(2)
		if err != nil {
			t.Fatal(err)
		}
		tops["simulated 2 domains"] = sim
	}
	return tops
}

// within runs f and fails the test if it has not returned after a few
// seconds, which turns a deadlock into a failure.
func within(t *testing.T, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		f()
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("deadlock: no return after 10 s")
	}
}

func TestSpread(t *testing.T) {
	tests := []struct {
		cpus    []int // CPUs per domain
		threads int
		want    []int
	}{
		{cpus: []int{4, 4}, threads: 8, want: []int{4, 4}},
		{cpus: []int{4, 4}, threads: 3, want: []int{2, 1}},
		{cpus: []int{3, 1}, threads: 4, want: []int{3, 1}},
		{cpus: []int{3, 1}, threads: 8, want: []int{6, 2}},
		{cpus: []int{1, 1, 1}, threads: 2, want: []int{1, 1, 0}},
		{cpus: []int{2, 6}, threads: 2, want: []int{1, 1}},
		{cpus: []int{2, 6}, threads: 8, want: []int{2, 6}},
		{cpus: []int{1, 1}, threads: 5, want: []int{3, 2}},
		{cpus: []int{8}, threads: 3, want: []int{3}},
	}
	for _, tt := range tests {
		var topo Topology
		next := 0
		for _, n := range tt.cpus {
			topo.Domains = append(topo.Domains, Domain{CPUs: seq(next, next+n-1)})
			next += n
		}
		if got := spread(topo, tt.threads); !slices.Equal(got, tt.want) {
			t.Errorf("spread(%v CPUs, %d threads) = %v, want %v", tt.cpus, tt.threads, got, tt.want)
		}
	}
}

func TestPoolPinsWorkers(t *testing.T) {
	for name, topo := range testTopologies(t) {
		for _, threads := range slices.Compact([]int{1, len(topo.Domains), 2*len(topo.Domains) + 1}) {
			t.Run(fmt.Sprintf("%s/%d threads", name, threads), func(t *testing.T) {
				requirePinning(t, topo)
				p, err := NewPool(topo, threads, Options{})
				if err != nil {
					t.Fatal(err)
				}
				defer p.Close()
				if got := len(p.Workers()); got != threads {
					t.Fatalf("%d workers, want %d", got, threads)
				}
				if p.Domains() != len(topo.Domains) {
					t.Errorf("Domains() = %d, want %d", p.Domains(), len(topo.Domains))
				}
				for i, w := range p.Workers() {
					if w.ID != i || !w.Pinned {
						t.Errorf("worker %d: %+v, want ID %d and pinned", i, w, i)
					}
					if i > 0 && w.Domain < p.Workers()[i-1].Domain {
						t.Errorf("workers not numbered domain after domain: %+v", p.Workers())
					}
				}

				// Two Runs: the same threads, still pinned, serve both.
				tids := make([]int, threads)
				for run := range 2 {
					err := p.Run(func(w Worker) error {
						if got, want := threadCPUs(t), topo.Domains[w.Domain].CPUs; !slices.Equal(got, want) {
							return fmt.Errorf("run %d: thread affinity %v, domain %d has CPUs %v", run, got, w.Domain, want)
						}
						if run == 0 {
							tids[w.ID] = unix.Gettid()
						} else if tid := unix.Gettid(); tid != tids[w.ID] {
							return fmt.Errorf("run %d: thread %d, first run used thread %d", run, tid, tids[w.ID])
						}
						return nil
					})
					if err != nil {
						t.Fatal(err)
					}
				}
			})
		}
	}
}

func TestPoolSimulatedOneCPUPerWorker(t *testing.T) {
	real, err := Detect()
	if err != nil {
		t.Fatal(err)
	}
	cpus := real.CPUs()
	if len(cpus) < 2 {
		t.Skip("needs 2 CPUs")
	}
	topo, err := real.Simulate(len(cpus))
	if err != nil {
		t.Fatal(err)
	}
	requirePinning(t, topo)
	p, err := NewPool(topo, len(cpus), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	got := make([][]int, len(cpus))
	if err := p.Run(func(w Worker) error { got[w.ID] = threadCPUs(t); return nil }); err != nil {
		t.Fatal(err)
	}
	for i, cpu := range cpus {
		if !slices.Equal(got[i], []int{cpu}) {
			t.Errorf("worker %d runs on CPUs %v, want only CPU %d", i, got[i], cpu)
		}
	}
}

// unpinnedPool returns a pool of threads workers over topo that pins
// nothing, closed when the test ends.
func unpinnedPool(t *testing.T, topo Topology, threads int, opts Options) *Pool {
	t.Helper()
	p, err := newPool(topo, threads, opts, func([]int) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	return p
}

func TestRunConcurrent(t *testing.T) {
	topo := Topology{Domains: []Domain{{CPUs: []int{0}}, {CPUs: []int{0}}}}
	p := unpinnedPool(t, topo, 4, Options{})
	// Every call waits for all the others: Run must call fn on all workers
	// at once.
	within(t, func() {
		for range 3 {
			var barrier sync.WaitGroup
			barrier.Add(len(p.Workers()))
			err := p.Run(func(Worker) error {
				barrier.Done()
				barrier.Wait()
				return nil
			})
			if err != nil {
				t.Error(err)
			}
		}
	})
	// Concurrent Runs with barriers reach every worker in one order.
	within(t, func() {
		var callers sync.WaitGroup
		for range 4 {
			callers.Go(func() {
				var barrier sync.WaitGroup
				barrier.Add(len(p.Workers()))
				if err := p.Run(func(Worker) error { barrier.Done(); barrier.Wait(); return nil }); err != nil {
					t.Error(err)
				}
			})
		}
		callers.Wait()
	})
}

// TestFor checks that For visits every index once, in chunks of the size
// asked, across the workers.
func TestFor(t *testing.T) {
	topo := Topology{Domains: []Domain{{CPUs: []int{0}}, {CPUs: []int{0}}}}
	p := unpinnedPool(t, topo, 3, Options{})
	for _, c := range []struct{ n, chunk int }{{0, 4}, {1, 4}, {10, 3}, {100, 1}, {7, 0}} {
		seen := make([]atomic.Int32, c.n)
		err := p.For(c.n, c.chunk, func(_ Worker, lo, hi int) {
			if hi-lo > max(c.chunk, 1) || hi > c.n {
				t.Errorf("n=%d chunk=%d: chunk [%d, %d)", c.n, c.chunk, lo, hi)
			}
			for i := lo; i < hi; i++ {
				seen[i].Add(1)
			}
		})
		if err != nil {
			t.Fatal(err)
		}
		for i := range seen {
			if seen[i].Load() != 1 {
				t.Errorf("n=%d chunk=%d: index %d visited %d times", c.n, c.chunk, i, seen[i].Load())
			}
		}
	}
}

// TestForInlineSingle checks that For visits every index once, in chunks,
// and that a pool of one worker started with InlineSingle runs them on the
// caller: its worker is kept busy meanwhile, so handed to the worker they
// would never run; otherwise the loop goes to the workers.
func TestForInlineSingle(t *testing.T) {
	one := Topology{Domains: []Domain{{CPUs: []int{0}}}}
	tests := []struct {
		name    string
		threads int
		inline  bool
		caller  bool // whether the loop must run on the caller
	}{
		{"one worker, inline", 1, true, true},
		{"one worker, not told", 1, false, false},
		{"three workers, inline", 3, true, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := unpinnedPool(t, one, tt.threads, Options{InlineSingle: tt.inline})
			// release frees the busy worker, also when the test fails
			// (the pool's cleanup waits for it).
			release := make(chan struct{})
			var once sync.Once
			free := func() { once.Do(func() { close(release) }) }
			defer free()
			busy := make(chan error, 1)
			if tt.caller {
				started := make(chan struct{})
				go func() { busy <- p.Run(func(Worker) error { close(started); <-release; return nil }) }()
				<-started
			}
			seen := make([]atomic.Int32, 10)
			var err error
			within(t, func() {
				err = p.For(len(seen), 3, func(w Worker, lo, hi int) {
					if w.ID >= tt.threads || hi-lo > 3 {
						t.Errorf("worker %d given [%d, %d)", w.ID, lo, hi)
					}
					for i := lo; i < hi; i++ {
						seen[i].Add(1)
					}
				})
			})
			free()
			if tt.caller {
				if berr := <-busy; berr != nil {
					t.Fatal(berr)
				}
			}
			if err != nil {
				t.Fatal(err)
			}
			for i := range seen {
				if seen[i].Load() != 1 {
					t.Errorf("index %d visited %d times", i, seen[i].Load())
				}
			}
			// A panic comes back as an error, as Run's does.
			if err := p.For(1, 1, func(Worker, int, int) { panic("boom") }); err == nil || !strings.Contains(err.Error(), "boom") {
				t.Errorf("panic returned %v", err)
			}
		})
	}
}

func TestRunErrors(t *testing.T) {
	topo := Topology{Domains: []Domain{{CPUs: []int{0}}, {CPUs: []int{0}}}}
	p := unpinnedPool(t, topo, 3, Options{})
	errBoom := errors.New("boom")
	tests := []struct {
		name    string
		fn      func(Worker) error
		wantIs  error
		wantMsg []string
	}{
		{
			name: "error",
			fn: func(w Worker) error {
				if w.ID == 1 {
					return errBoom
				}
				return nil
			},
			wantIs:  errBoom,
			wantMsg: []string{"worker 1 (domain 0): boom"},
		},
		{
			name: "panic",
			fn: func(w Worker) error {
				if w.ID == 2 {
					var empty []int
					_ = empty[w.ID] // a runtime error, not an explicit panic call
				}
				return nil
			},
			wantMsg: []string{"worker 2 (domain 1): panic: runtime error: index out of range", "goroutine ", "pool_test.go"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := p.Run(tt.fn)
			if err == nil {
				t.Fatal("Run returned nil, want error")
			}
			if tt.wantIs != nil && !errors.Is(err, tt.wantIs) {
				t.Errorf("error %v is not %v", err, tt.wantIs)
			}
			for _, msg := range tt.wantMsg {
				if !strings.Contains(err.Error(), msg) {
					t.Errorf("error %q does not contain %q", err, msg)
				}
			}
			// The pool survives: every worker still answers.
			var calls [3]bool
			if err := p.Run(func(w Worker) error { calls[w.ID] = true; return nil }); err != nil {
				t.Fatal(err)
			}
			if calls != [3]bool{true, true, true} {
				t.Errorf("after failure, workers called: %v", calls)
			}
		})
	}
}

func TestRunOnDomain(t *testing.T) {
	for name, topo := range testTopologies(t) {
		t.Run(name, func(t *testing.T) {
			requirePinning(t, topo)
			p, err := NewPool(topo, 2*len(topo.Domains), Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close()
			for d, dom := range topo.Domains {
				var got []int
				if err := p.runOnDomain(d, func() error { got = threadCPUs(t); return nil }); err != nil {
					t.Fatal(err)
				}
				if !slices.Equal(got, dom.CPUs) {
					t.Errorf("domain %d: ran on CPUs %v, want %v", d, got, dom.CPUs)
				}
			}
			errBoom := errors.New("boom")
			if err := p.runOnDomain(0, func() error { return errBoom }); err != errBoom {
				t.Errorf("runOnDomain returned %v, want fn's error %v", err, errBoom)
			}
			err = p.runOnDomain(0, func() error { panic("kaboom") })
			if err == nil || !strings.Contains(err.Error(), "panic: kaboom") {
				t.Errorf("runOnDomain after panic returned %v", err)
			}
			for _, d := range []int{-1, len(topo.Domains)} {
				if err := p.runOnDomain(d, func() error { return nil }); err == nil {
					t.Errorf("runOnDomain(%d) succeeded on %d domains", d, len(topo.Domains))
				}
			}
		})
	}
}

func TestPoolClose(t *testing.T) {
	p, err := newPool(Topology{Domains: []Domain{{CPUs: []int{0}}}}, 2, Options{}, func([]int) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	p.Close()
	p.Close()
	if err := p.Run(func(Worker) error { return nil }); !errors.Is(err, ErrClosed) {
		t.Errorf("Run after Close: %v, want ErrClosed", err)
	}
	if err := p.runOnDomain(0, func() error { return nil }); !errors.Is(err, ErrClosed) {
		t.Errorf("runOnDomain after Close: %v, want ErrClosed", err)
	}
}

func TestPoolPinRefused(t *testing.T) {
	topo := Topology{Domains: []Domain{{ID: 0, CPUs: []int{0}}, {ID: 1, CPUs: []int{1}}}}
	tests := []struct {
		name       string
		pin        func([]int) error
		wantPinned []bool
		wantWarn   int
	}{
		{
			name:       "all refused",
			pin:        func([]int) error { return unix.EPERM },
			wantPinned: []bool{false, false, false, false},
			wantWarn:   1,
		},
		{
			name: "domain 1 refused",
			pin: func(cpus []int) error {
				if cpus[0] == 1 {
					return unix.EINVAL
				}
				return nil
			},
			wantPinned: []bool{true, true, false, false},
			wantWarn:   1,
		},
		{
			name:       "none refused",
			pin:        func([]int) error { return nil },
			wantPinned: []bool{true, true, true, true},
			wantWarn:   0,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			log := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
			p, err := newPool(topo, 4, Options{Log: log}, tt.pin)
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close()
			var pinned []bool
			for _, w := range p.Workers() {
				pinned = append(pinned, w.Pinned)
			}
			if !reflect.DeepEqual(pinned, tt.wantPinned) {
				t.Errorf("pinned %v, want %v", pinned, tt.wantPinned)
			}
			if n := strings.Count(buf.String(), "level=WARN"); n != tt.wantWarn {
				t.Errorf("%d warnings, want %d; log:\n%s", n, tt.wantWarn, buf.String())
			}
			// Unpinned workers still run.
			seen := make([]Worker, 4)
			if err := p.Run(func(w Worker) error { seen[w.ID] = w; return nil }); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(seen, p.Workers()) {
				t.Errorf("Run saw workers %+v, want %+v", seen, p.Workers())
			}
		})
	}
}

func TestNewPoolErrors(t *testing.T) {
	tests := []struct {
		name    string
		topo    Topology
		threads int
	}{
		{name: "no threads", topo: Topology{Domains: []Domain{{CPUs: []int{0}}}}, threads: 0},
		{name: "no domains", topo: Topology{}, threads: 2},
		{name: "domain without CPUs", topo: Topology{Domains: []Domain{{CPUs: []int{0}}, {ID: 1}}}, threads: 2},
	}
	for _, tt := range tests {
		if p, err := NewPool(tt.topo, tt.threads, Options{}); err == nil {
			p.Close()
			t.Errorf("%s: NewPool succeeded", tt.name)
		}
	}
}

// TestPoolCloseEndsPinnedThreads checks that no thread left pinned by a
// closed pool goes back to the Go scheduler, where it would run unrelated
// goroutines on one domain's CPUs.
func TestPoolCloseEndsPinnedThreads(t *testing.T) {
	real, err := Detect()
	if err != nil {
		t.Fatal(err)
	}
	all := real.CPUs()
	if len(all) < 2 {
		t.Skip("needs 2 CPUs")
	}
	topo, err := real.Simulate(len(all))
	if err != nil {
		t.Fatal(err)
	}
	requirePinning(t, topo)
	for range 3 {
		p, err := NewPool(topo, 2*len(all), Options{})
		if err != nil {
			t.Fatal(err)
		}
		if err := p.Run(func(Worker) error { return nil }); err != nil {
			t.Fatal(err)
		}
		p.Close()
	}
	var wg sync.WaitGroup
	for range 64 {
		wg.Go(func() {
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			if got := threadCPUs(t); !slices.Equal(got, all) {
				t.Errorf("thread %d has affinity %v after Close, want %v", unix.Gettid(), got, all)
			}
		})
	}
	wg.Wait()
}

// TestProfile checks what a pool's profile counts: each Run, For (inline
// or not) and Team loop once, its wall time, and the workers' busy time in
// it; not the time a Team's lead spends between loops, nor the time its
// workers say they waited in a loop (Team.Waited).
func TestProfile(t *testing.T) {
	one := Topology{Domains: []Domain{{CPUs: []int{0, 1, 2}}}}
	const nap = 20 * time.Millisecond
	sleep := func(Worker) error { time.Sleep(nap); return nil }
	for _, c := range []struct {
		name           string
		threads        int
		inline         bool
		run            func(p *Pool) error
		loops, busyMin int // busy in naps
		busyMax        int // in naps, if not 0
	}{
		{"Run", 3, false, func(p *Pool) error { return p.Run(sleep) }, 1, 3, 0},
		{"For", 3, false, func(p *Pool) error {
			return p.For(3, 1, func(w Worker, lo, hi int) { time.Sleep(nap) })
		}, 1, 3, 0},
		{"For inline", 1, true, func(p *Pool) error {
			return p.For(2, 1, func(w Worker, lo, hi int) { time.Sleep(nap) })
		}, 1, 2, 0},
		{"Team", 3, false, func(p *Pool) error {
			return p.Together(func(team *Team) error {
				time.Sleep(2 * nap) // the lead between loops: not in the profile
				if err := team.Run(sleep); err != nil {
					return err
				}
				return team.For(3, 1, func(w Worker, lo, hi int) { time.Sleep(nap) })
			})
		}, 2, 6, 0},
		{"Team waits", 3, false, func(p *Pool) error {
			return p.Together(func(team *Team) error {
				return team.Run(func(Worker) error {
					time.Sleep(2 * nap) // most of it waiting for another worker
					team.Waited(3 * nap / 2)
					return nil
				})
			})
		}, 1, 1, 5},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := unpinnedPool(t, one, c.threads, Options{InlineSingle: c.inline})
			before := p.Profile()
			start := time.Now()
			if err := c.run(p); err != nil {
				t.Fatal(err)
			}
			wall := time.Since(start).Seconds()
			got := p.Profile().Sub(before)
			if got.Loops != int64(c.loops) {
				t.Errorf("%d loops, want %d", got.Loops, c.loops)
			}
			if got.BusyS < float64(c.busyMin)*nap.Seconds() || got.BusyS > float64(c.threads)*wall {
				t.Errorf("busy %.3f s, want at least %d naps and at most %d × the wall time %.3f s", got.BusyS, c.busyMin, c.threads, wall)
			}
			if c.busyMax > 0 && got.BusyS > float64(c.busyMax)*nap.Seconds() {
				t.Errorf("busy %.3f s, want at most %d naps: the waits counted busy", got.BusyS, c.busyMax)
			}
			if c.name == "Team" && got.LoopS > wall-1.9*nap.Seconds() {
				t.Errorf("loops %.3f s of a %.3f s run whose lead waited %v between loops", got.LoopS, wall, 2*nap)
			}
		})
	}
}
