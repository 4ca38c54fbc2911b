package numa

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestTogether runs loops on a Team: every worker takes part in each loop
// once and at the same time as the others (a barrier in every loop), the
// lead on its own thread, whether the members spin between loops or park
// (a pause longer than TeamSpin, or loops longer than it: the team still
// holds them), or the team is led by the caller (CPUs shared with other
// pools); errors and panics come back prefixed with their worker, and the
// pool serves other work afterwards.
func TestTogether(t *testing.T) {
	for _, sharing := range []int{1, 2} {
		t.Run(fmt.Sprintf("pools=%d", sharing), func(t *testing.T) { testTogether(t, sharing) })
	}
}

func testTogether(t *testing.T, sharing int) {
	// 3 workers on 4 CPUs: they fit unless another pool shares the CPUs.
	topo := Topology{Domains: []Domain{{CPUs: []int{0, 1}}, {CPUs: []int{2, 3}}}}
	p := unpinnedPool(t, topo, 3, Options{SharedBy: sharing})
	if got, want := p.fitsCPUs(), sharing == 1; got != want {
		t.Fatalf("with %d pools sharing the CPUs, fitsCPUs() = %v, want %v", sharing, got, want)
	}
	errBoom := errors.New("boom")
	const lead = 0
	tests := []struct {
		name    string
		loops   int
		pause   time.Duration // the lead's pause between loops
		work    time.Duration // each worker's time in every loop
		failing int           // the worker whose call of the last loop fails, -1: none
		panics  bool          // fail by a panic, not an error
		wantErr string
	}{
		{"many short loops", 200, 0, 0, -1, false, ""},
		{"members park between loops", 4, 3 * TeamSpin, 0, -1, false, ""},
		{"long loops park the members", 24, 0, 2 * TeamSpin, -1, false, ""},
		{"a member fails", 3, 0, 0, 1, false, "worker 1 (domain 0): boom"},
		{"a parked member fails", 2, 3 * TeamSpin, 0, 2, false, "worker 2 (domain 1): boom"},
		{"the lead fails", 3, 0, 0, 0, false, "boom"},
		{"a member panics", 3, 0, 0, 2, true, "worker 2 (domain 1): panic: boom"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var calls [3]atomic.Int32
			leadOnThread := true
			var err error
			within(t, func() {
				err = p.Together(func(team *Team) error {
					if got := team.Lead().ID; got != lead {
						t.Errorf("Lead() = %d, want %d", got, lead)
					}
					if got := team.Workers(); got != 3 {
						t.Errorf("Workers() = %d, want 3", got)
					}
					if got := team.HoldsWorkers(); got != (sharing == 1) {
						t.Errorf("with %d pools sharing the CPUs, HoldsWorkers() = %v", sharing, got)
					}
					leadThread := unix.Gettid()
					for loop := range tt.loops {
						time.Sleep(tt.pause)
						var barrier sync.WaitGroup
						barrier.Add(team.Workers())
						err := team.Run(func(w Worker) error {
							calls[w.ID].Add(1)
							if w.ID == lead && unix.Gettid() != leadThread {
								leadOnThread = false
							}
							time.Sleep(tt.work)
							barrier.Done()
							barrier.Wait()
							if loop == tt.loops-1 && w.ID == tt.failing {
								if tt.panics {
									panic("boom")
								}
								return errBoom
							}
							return nil
						})
						if err != nil {
							return err
						}
					}
					// Loops longer than TeamSpin park the members between
					// loops; the team still holds them.
					if got := team.HoldsWorkers(); got != (sharing == 1) {
						t.Errorf("after the loops, HoldsWorkers() = %v", got)
					}
					if tt.work > TeamSpin && sharing == 1 && team.spinFor.Load() != 0 {
						t.Error("the members still spin after loops longer than TeamSpin")
					}
					return nil
				})
			})
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatal(err)
			case tt.wantErr != "" && (err == nil || !strings.HasSuffix(err.Error(), tt.wantErr) && !strings.HasPrefix(err.Error(), tt.wantErr)):
				t.Fatalf("error %v, want %q", err, tt.wantErr)
			case tt.wantErr != "" && !tt.panics && !errors.Is(err, errBoom):
				t.Fatalf("error %v does not wrap %v", err, errBoom)
			}
			for id := range calls {
				if n := calls[id].Load(); n != int32(tt.loops) {
					t.Errorf("worker %d called %d times, want %d", id, n, tt.loops)
				}
			}
			// A team that does not spin hands every share to the pool's
			// workers, the lead's too.
			if !leadOnThread && sharing == 1 {
				t.Error("the lead's share did not run on the lead's thread")
			}
			var after atomic.Int32
			within(t, func() {
				if err := p.Run(func(Worker) error { after.Add(1); return nil }); err != nil {
					t.Error(err)
				}
			})
			if after.Load() != 3 {
				t.Errorf("after the team, Run called %d workers, want 3", after.Load())
			}
		})
	}
}

// TestTogetherOneWorker checks that a pool of one worker that runs its
// loops itself (InlineSingle) runs Together's body on its worker's thread,
// with the team's loops there, where the worker fits the CPUs, and on the
// caller where it shares them with more pools than they hold or where its
// loops are to be handed to the worker.
func TestTogetherOneWorker(t *testing.T) {
	topo := Topology{Domains: []Domain{{CPUs: []int{0, 1}}}}
	for _, tt := range []struct {
		sharing  int
		inline   bool
		onWorker bool
		wantHeld bool
	}{{1, true, true, true}, {3, true, false, false}, {1, false, false, false}} {
		t.Run(fmt.Sprintf("pools=%d/inline=%v", tt.sharing, tt.inline), func(t *testing.T) {
			p := unpinnedPool(t, topo, 1, Options{SharedBy: tt.sharing, InlineSingle: tt.inline})
			var workerThread int
			within(t, func() {
				if err := p.Run(func(Worker) error { workerThread = unix.Gettid(); return nil }); err != nil {
					t.Fatal(err)
				}
			})
			var bodyThread int
			var done [100]atomic.Int32
			within(t, func() {
				err := p.Together(func(team *Team) error {
					bodyThread = unix.Gettid()
					if team.Workers() != 1 || team.HoldsWorkers() != tt.wantHeld {
						t.Errorf("Workers() = %d, HoldsWorkers() = %v, want 1 and %v", team.Workers(), team.HoldsWorkers(), tt.wantHeld)
					}
					return team.For(len(done), 7, func(_ Worker, lo, hi int) {
						for i := lo; i < hi; i++ {
							done[i].Add(1)
						}
					})
				})
				if err != nil {
					t.Fatal(err)
				}
			})
			if got := bodyThread == workerThread; got != tt.onWorker {
				t.Errorf("body on the worker's thread: %v, want %v", got, tt.onWorker)
			}
			for i := range done {
				if n := done[i].Load(); n != 1 {
					t.Fatalf("index %d done %d times, want 1", i, n)
				}
			}
		})
	}
}

// TestTeamFor deals loops of chunks on a Team whose members spin between
// loops or park (a pause longer than TeamSpin), between loops of Run:
// every index is done once per loop, every worker runs each loop of Run
// once, and a chunk that panics fails its loop, the next loops working.
func TestTeamFor(t *testing.T) {
	topo := Topology{Domains: []Domain{{CPUs: []int{0, 1}}, {CPUs: []int{2, 3}}}}
	p := unpinnedPool(t, topo, 4, Options{})
	for _, pause := range []time.Duration{0, 3 * TeamSpin} {
		t.Run(fmt.Sprintf("pause %v", pause), func(t *testing.T) {
			const n, chunk, loops = 37, 3, 12
			var err error
			within(t, func() {
				err = p.Together(func(team *Team) error {
					for loop := range loops {
						time.Sleep(pause)
						var seen [n]atomic.Int32
						if err := team.For(n, chunk, func(_ Worker, lo, hi int) {
							for i := lo; i < hi; i++ {
								seen[i].Add(1)
							}
						}); err != nil {
							return err
						}
						for i := range seen {
							if c := seen[i].Load(); c != 1 {
								return fmt.Errorf("loop %d: index %d done %d times", loop, i, c)
							}
						}
						var calls [4]atomic.Int32
						if err := team.Run(func(w Worker) error { calls[w.ID].Add(1); return nil }); err != nil {
							return err
						}
						for id := range calls {
							if c := calls[id].Load(); c != 1 {
								return fmt.Errorf("loop %d: Run called worker %d %d times", loop, id, c)
							}
						}
						if loop%4 == 3 {
							err := team.For(n, 1, func(_ Worker, lo, _ int) {
								if lo == 5 {
									panic("boom")
								}
							})
							if err == nil || !strings.Contains(err.Error(), "panic: boom") {
								return fmt.Errorf("loop %d: a panicking chunk gave %v", loop, err)
							}
						}
					}
					return nil
				})
			})
			if err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestTeamSpread spreads loops over the workers of a Team that spins,
// one whose members park (a pause longer than TeamSpin) and one whose
// loops go to its pool (more workers than CPUs): every index is done once
// per loop, whatever n is beside the workers; the others take the indices
// of a worker held up in its first one (it waits until they have done
// every other index); and an index that panics fails its loop, the next
// loops working.
func TestTeamSpread(t *testing.T) {
	tests := []struct {
		name  string
		cpus  []int
		pause time.Duration
	}{
		{"spinning", []int{0, 1, 2, 3}, 0},
		{"parking", []int{0, 1, 2, 3}, 3 * TeamSpin},
		{"pool", []int{0}, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := unpinnedPool(t, Topology{Domains: []Domain{{CPUs: tc.cpus}}}, 4, Options{})
			var err error
			within(t, func() {
				err = p.Together(func(team *Team) error {
					for loop, n := range []int{0, 1, 3, 4, 37, 64, 5} {
						time.Sleep(tc.pause)
						seen := make([]atomic.Int32, n)
						var done atomic.Int32
						var stuck atomic.Bool
						held := -1
						if err := team.Spread(n, func(w Worker, i int) {
							if w.ID == 1 && held < 0 && n > 1 {
								held = i
								for deadline := time.Now().Add(2 * time.Second); done.Load() < int32(n-1); {
									if time.Now().After(deadline) {
										stuck.Store(true)
										break
									}
									time.Sleep(10 * time.Microsecond)
								}
							}
							seen[i].Add(1)
							done.Add(1)
						}); err != nil {
							return err
						}
						if stuck.Load() {
							return fmt.Errorf("loop %d (n %d): the others left worker 1's indices to it", loop, n)
						}
						for i := range seen {
							if c := seen[i].Load(); c != 1 {
								return fmt.Errorf("loop %d (n %d): index %d done %d times", loop, n, i, c)
							}
						}
					}
					err := team.Spread(9, func(_ Worker, i int) {
						if i == 5 {
							panic("boom")
						}
					})
					if err == nil || !strings.Contains(err.Error(), "panic: boom") {
						return fmt.Errorf("a panicking index gave %v", err)
					}
					count := 0
					var mu sync.Mutex
					if err := team.Spread(8, func(Worker, int) { mu.Lock(); count++; mu.Unlock() }); err != nil || count != 8 {
						return fmt.Errorf("after a failed loop: %d of 8 indices, %v", count, err)
					}
					return nil
				})
			})
			if err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestTeamForThen runs loops of ForThen on a Team that spins, one whose
// members park and one whose loops go to its pool: every chunk and every
// index is done once, each index after the chunk it waits for (WaitFor).
// Where the team holds its members, one chunk waits until the indices that
// do not wait for it are done (it fails if they wait for its end: two
// loops, not one). A chunk that panics fails its loop, an index waiting for
// it stops waiting, and the next loop works.
func TestTeamForThen(t *testing.T) {
	tests := []struct {
		name    string
		cpus    []int
		pause   time.Duration
		overlap bool // the second part runs while the first's chunks do
	}{
		{"spinning", []int{0, 1, 2, 3}, 0, true},
		{"parking", []int{0, 1, 2, 3}, 3 * TeamSpin, true},
		{"pool", []int{0}, 0, false},
	}
	const n, chunk, m = 23, 2, 17
	waitsFor := func(i int) int { return (i * 7) % n } // the index of the first part index i reads
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := unpinnedPool(t, Topology{Domains: []Domain{{CPUs: tc.cpus}}}, 4, Options{})
			var err error
			within(t, func() {
				err = p.Together(func(team *Team) error {
					for loop := range 6 {
						time.Sleep(tc.pause)
						var first [n]atomic.Int32
						var second [m]atomic.Int32
						var secondDone atomic.Int32
						var stuck atomic.Bool
						held := loop % n / chunk * chunk // the first index of the chunk that waits
						free := 0                        // the indices of the second part that do not wait for it
						for i := range m {
							if waitsFor(i) < held || waitsFor(i) >= held+chunk {
								free++
							}
						}
						panics := loop == 4
						err := team.ForThen(n, chunk, func(_ Worker, lo, hi int) {
							if lo == held && tc.overlap {
								for deadline := time.Now().Add(2 * time.Second); secondDone.Load() < int32(free); {
									if time.Now().After(deadline) {
										stuck.Store(true)
										break
									}
									time.Sleep(10 * time.Microsecond)
								}
							}
							if lo == held && panics {
								panic("boom")
							}
							for i := lo; i < hi; i++ {
								first[i].Add(1)
							}
						}, m, func(_ Worker, i int) {
							if !team.WaitFor(func() bool { return first[waitsFor(i)].Load() != 0 }) {
								return // the loop failed
							}
							second[i].Add(1)
							secondDone.Add(1)
						})
						if stuck.Load() {
							return fmt.Errorf("loop %d: the second part waited for the first part's end", loop)
						}
						if panics {
							if err == nil || !strings.Contains(err.Error(), "panic: boom") {
								return fmt.Errorf("loop %d: a panicking chunk gave %v", loop, err)
							}
							continue
						}
						if err != nil {
							return err
						}
						for i := range first {
							if c := first[i].Load(); c != 1 {
								return fmt.Errorf("loop %d: index %d of the first part done %d times", loop, i, c)
							}
						}
						for i := range second {
							if c := second[i].Load(); c != 1 {
								return fmt.Errorf("loop %d: index %d of the second part done %d times", loop, i, c)
							}
						}
					}
					return nil
				})
			})
			if err != nil {
				t.Fatal(err)
			}
		})
	}
}
