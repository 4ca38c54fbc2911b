package runner

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"xmc/mpi"
	"xmc/numa"
	"xmc/numa/numatest"
)

// lsqTrainer is the round mode's test trainer: gradient descent on the
// least-squares problem min ½‖Aw − b‖², with the coordinates of w split
// into units owned by ranks (model parallelism). Every round each rank
// computes its units' part of Aw, an Allreduce sums the parts (each unit's
// slot is non-zero on its owner alone, so the sum is exact and the same on
// every number of ranks), every rank forms the residual from the parts in
// unit order, and each rank steps its own coordinates. The shared state is
// the step size, halved whenever the loss grows.
type lsqTrainer struct {
	comm     mpi.Comm
	a        [][]float64 // n rows of d
	b        []float64
	units    int
	per      int // coordinates per unit
	tol      float64
	stopAt   int // cancel the context before this round (0: never), on stopRank
	stopRank int
	cancel   context.CancelFunc

	owned []int
	w     map[int][]float64 // per owned unit, its coordinates
	step  float64
	loss  float64
}

func newLSQ(c mpi.Comm, n, units, per int) *lsqTrainer {
	d := units * per
	t := &lsqTrainer{comm: c, a: make([][]float64, n), b: make([]float64, n), units: units, per: per, tol: 1e-9}
	for i := range n {
		t.a[i] = make([]float64, d)
		for j := range d {
			// A fixed, well-conditioned matrix: a diagonal-heavy band.
			t.a[i][j] = math.Sin(float64(3*i+7*j+1)) / 4
			if i%d == j {
				t.a[i][j] += 2
			}
		}
		t.b[i] = math.Cos(float64(i))
	}
	return t
}

func (t *lsqTrainer) Start(units []int, round int, state [][]byte, shared []byte) error {
	t.owned, t.w, t.step, t.loss = units, map[int][]float64{}, 0.2, math.Inf(1)
	for i, u := range units {
		w := make([]float64, t.per)
		if state != nil {
			if len(state[i]) != 8*t.per {
				return fmt.Errorf("unit %d: state of %d bytes", u, len(state[i]))
			}
			for j := range w {
				w[j] = math.Float64frombits(binary.LittleEndian.Uint64(state[i][8*j:]))
			}
		}
		t.w[u] = w
	}
	if shared != nil {
		t.step = math.Float64frombits(binary.LittleEndian.Uint64(shared))
		t.loss = math.Float64frombits(binary.LittleEndian.Uint64(shared[8:]))
	}
	return nil
}

func (t *lsqTrainer) Round(ctx context.Context, r int, _ *numa.Team) (bool, error) {
	if r+1 == t.stopAt && t.comm.Rank() == t.stopRank {
		t.cancel() // seen by the runner before the next round
	}
	n := len(t.b)
	parts := make([]float64, t.units*n)
	for _, u := range t.owned {
		for i := range n {
			var s float64
			for j, v := range t.w[u] {
				s += t.a[i][u*t.per+j] * v
			}
			parts[u*n+i] = s
		}
	}
	if err := t.comm.AllreduceFloat64(parts, mpi.Sum); err != nil {
		return false, err
	}
	res := make([]float64, n)
	loss := 0.0
	for i := range n {
		for u := range t.units {
			res[i] += parts[u*n+i]
		}
		res[i] -= t.b[i]
		loss += res[i] * res[i] / 2
	}
	if loss > t.loss {
		t.step /= 2
	}
	done := math.Abs(t.loss-loss) <= t.tol*loss
	t.loss = loss
	for _, u := range t.owned {
		for j := range t.w[u] {
			var g float64
			for i := range n {
				g += t.a[i][u*t.per+j] * res[i]
			}
			t.w[u][j] -= t.step * g
		}
	}
	return done, nil
}

func (t *lsqTrainer) encode(u int) []byte {
	var b []byte
	for _, v := range t.w[u] {
		b = binary.LittleEndian.AppendUint64(b, math.Float64bits(v))
	}
	return b
}

func (t *lsqTrainer) Save() ([][]byte, []byte, error) {
	state := make([][]byte, len(t.owned))
	for i, u := range t.owned {
		state[i] = t.encode(u)
	}
	shared := binary.LittleEndian.AppendUint64(nil, math.Float64bits(t.step))
	return state, binary.LittleEndian.AppendUint64(shared, math.Float64bits(t.loss)), nil
}

func (t *lsqTrainer) Finish(*numa.Team) ([]Result, error) {
	var out []Result
	for _, u := range t.owned {
		out = append(out, Result{Unit: u, Data: t.encode(u)})
	}
	return out, nil
}

// roundsRun describes one training of lsqTrainer by runRounds.
type roundsRun struct {
	ranks, rounds int
	checkpoint    string
	stopAt        int // a signal reaches stopRank during round stopAt-1
	stopRank      int
	log           *slog.Logger // nil: discarded
}

// runRounds trains lsqTrainer (40 rows, 6 units of 2 coordinates) on
// in-process ranks and returns the gathered model and the rounds rank 0
// reported done.
func runRounds(t *testing.T, run roundsRun) ([][]byte, int, error) {
	t.Helper()
	var gathered [][]byte
	prog := &countingProgress{}
	err := mpi.Launch(run.ranks, mpi.MaxMessage, func(c mpi.Comm) error {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		tr := newLSQ(c, 40, 6, 2)
		tr.stopAt, tr.stopRank, tr.cancel = run.stopAt, run.stopRank, cancel
		p := Rounds{Units: tr.units, Rounds: run.rounds, Kind: "round", Comm: c, Pool: numatest.Pool(t, 1, 1), Log: run.log,
			Checkpoint: run.checkpoint, Fingerprint: "lsq"}
		if p.Log == nil {
			p.Log = slog.New(slog.DiscardHandler)
		}
		if c.Rank() == 0 {
			p.Progress = prog
		}
		own, stopped, runErr := p.Run(ctx, tr)
		if runErr != nil {
			return runErr
		}
		all, err := Gather(c, tr.units, own, 0)
		if err != nil {
			return err
		}
		if c.Rank() == 0 {
			gathered = all
		}
		if stopped {
			return errStopped
		}
		return nil
	})
	return gathered, prog.done, err
}

// TestRoundsIndependentOfRanks checks that a round trainer's model does not
// depend on the number of ranks, and that it converges.
func TestRoundsIndependentOfRanks(t *testing.T) {
	want, done, err := runRounds(t, roundsRun{ranks: 1, rounds: 500})
	if err != nil {
		t.Fatal(err)
	}
	if done < 5 || done >= 500 {
		t.Errorf("1 rank: %d rounds, want convergence in between", done)
	}
	for _, ranks := range []int{2, 4, 7} {
		got, gotDone, err := runRounds(t, roundsRun{ranks: ranks, rounds: 500})
		if err != nil {
			t.Fatal(err)
		}
		if gotDone != done {
			t.Errorf("%d ranks: %d rounds, 1 rank %d", ranks, gotDone, done)
		}
		for u := range want {
			if !bytes.Equal(got[u], want[u]) {
				t.Errorf("%d ranks: unit %d differs from 1 rank", ranks, u)
			}
		}
	}
}

// TestRoundsInterruptAndResume stops runs at several rounds, on one rank
// only, and resumes them, on another number of ranks: the model must be
// the same, byte for byte, as the uninterrupted run's.
func TestRoundsInterruptAndResume(t *testing.T) {
	want, done, err := runRounds(t, roundsRun{ranks: 2, rounds: 500})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ ranks, stopAt, stopRank, resumeRanks int }{
		{2, 1, 0, 2}, {2, 3, 1, 3}, {3, 7, 2, 1}, {1, done - 1, 0, 4},
	} {
		t.Run(fmt.Sprintf("%d ranks stop at %d on rank %d, resume on %d", c.ranks, c.stopAt, c.stopRank, c.resumeRanks), func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "ckpt")
			var log bytes.Buffer
			_, stopped, err := runRounds(t, roundsRun{ranks: c.ranks, rounds: 500, checkpoint: dir, stopAt: c.stopAt, stopRank: c.stopRank,
				log: slog.New(slog.NewTextHandler(&log, nil))})
			if !errors.Is(err, errStopped) || !strings.Contains(log.String(), "saved in "+dir) {
				t.Fatalf("stopped run: %v, want it stopped and its log to say it saved in the checkpoint; log:\n%s", err, log.String())
			}
			if stopped != c.stopAt {
				t.Errorf("stopped after %d rounds, want %d", stopped, c.stopAt)
			}
			if b, _ := os.ReadFile(filepath.Join(dir, roundFile)); strings.TrimSpace(string(b)) != fmt.Sprint(c.stopAt) {
				t.Errorf("%s holds %q, want %d", roundFile, b, c.stopAt)
			}
			got, resumedDone, err := runRounds(t, roundsRun{ranks: c.resumeRanks, rounds: 500, checkpoint: dir})
			if err != nil {
				t.Fatal(err)
			}
			if resumedDone != done {
				t.Errorf("resumed run ended after %d rounds, the uninterrupted one after %d", resumedDone, done)
			}
			for u := range want {
				if !bytes.Equal(got[u], want[u]) {
					t.Errorf("unit %d differs from the uninterrupted run", u)
				}
			}
		})
	}
}

// TestRoundsCheckpointEvery saves after every round and checks that only
// the newest round is kept, and that a crash between the ranks' updates of
// ROUND resumes from the older round they name.
func TestRoundsCheckpointEvery(t *testing.T) {
	want, _, err := runRounds(t, roundsRun{ranks: 2, rounds: 500})
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "ckpt")
	// CheckpointEvery 0 (runRounds' default) saves before every round.
	if _, _, err := runRounds(t, roundsRun{ranks: 2, rounds: 500, checkpoint: dir, stopAt: 6, stopRank: 1}); !errors.Is(err, errStopped) {
		t.Fatal(err)
	}
	rounds, _ := filepath.Glob(filepath.Join(dir, "round-*"))
	if len(rounds) != 1 || filepath.Base(rounds[0]) != "round-000000006" {
		t.Fatalf("checkpoint holds %v, want round-000000006 alone", rounds)
	}
	units, err := CheckpointUnits(rounds[0])
	if err != nil {
		t.Fatal(err)
	}
	if len(units) != 6 {
		t.Errorf("round directory holds %d units, want 6", len(units))
	}
	// A ROUND naming a round whose files are gone is an error naming it.
	os.WriteFile(filepath.Join(dir, roundFile), []byte("9\n"), 0o644)
	if _, _, err := runRounds(t, roundsRun{ranks: 2, rounds: 500, checkpoint: dir}); err == nil || !strings.Contains(err.Error(), "round 9") {
		t.Errorf("missing round: %v", err)
	}
	os.WriteFile(filepath.Join(dir, roundFile), []byte("6\n"), 0o644)
	got, _, err := runRounds(t, roundsRun{ranks: 2, rounds: 500, checkpoint: dir})
	if err != nil {
		t.Fatal(err)
	}
	for u := range want {
		if !bytes.Equal(got[u], want[u]) {
			t.Errorf("unit %d differs from the uninterrupted run", u)
		}
	}
}

// TestRoundsUnitBalance runs 6 units on 3, 4 and 8 ranks: every layout
// gives the one rank's model; rank 0 alone warns once where ranks own no
// unit (8), or where the ranks' unequal shares of units keep them busy
// less than minUnitBalance of the time (4 ranks: 2 units or 1, 0.75), and
// not where the ranks divide the units (3).
func TestRoundsUnitBalance(t *testing.T) {
	want, _, err := runRounds(t, roundsRun{ranks: 1, rounds: 50})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		ranks   int
		warning string // "" for none
	}{
		{3, ""},
		{4, "the ranks own unequal numbers of units"},
		{8, "fewer units than ranks"},
	} {
		// One handler for every rank: slog's handlers serialise their writes.
		var log strings.Builder
		got, _, err := runRounds(t, roundsRun{ranks: tc.ranks, rounds: 50, log: slog.New(slog.NewTextHandler(&log, nil))})
		if err != nil {
			t.Fatal(err)
		}
		if !slices.EqualFunc(got, want, bytes.Equal) {
			t.Errorf("%d ranks for 6 units: model differs from 1 rank's", tc.ranks)
		}
		warnings := strings.Count(log.String(), "level=WARN")
		if tc.warning == "" && warnings != 0 || tc.warning != "" && (warnings != 1 || !strings.Contains(log.String(), tc.warning)) {
			t.Errorf("%d ranks for 6 units: want the warning %q, once; log:\n%s", tc.ranks, tc.warning, log.String())
		}
	}
	for _, tc := range []struct {
		units, ranks int
		want         float64
	}{
		{6, 3, 1}, {6, 4, 0.75}, {16, 10, 0.8}, {128, 10, 128.0 / 130}, {73, 16, 73.0 / 80}, {128, 16, 1},
	} {
		if got := unitBalance(tc.units, tc.ranks); got != tc.want {
			t.Errorf("unitBalance(%d, %d) = %v, want %v", tc.units, tc.ranks, got, tc.want)
		}
	}
}

// TestRoundsRoundLimit stops at the round limit, which is complete, not
// interrupted.
func TestRoundsRoundLimit(t *testing.T) {
	_, done, err := runRounds(t, roundsRun{ranks: 3, rounds: 4})
	if err != nil || done != 4 {
		t.Errorf("4 rounds at most: %d rounds, %v", done, err)
	}
}

// TestRoundsErrorEndsJob makes one rank's round fail: every rank must return,
// the failing one with the round named.
func TestRoundsErrorEndsJob(t *testing.T) {
	var mu sync.Mutex
	err := mpi.Launch(3, mpi.MaxMessage, func(c mpi.Comm) error {
		tr := &failingRounds{lsqTrainer: newLSQ(c, 10, 3, 1), failAt: 2}
		p := Rounds{Units: 3, Rounds: 10, Kind: "round", Comm: c, Pool: numatest.Pool(t, 1, 1), Log: slog.New(slog.DiscardHandler)}
		_, _, err := p.Run(context.Background(), tr)
		mu.Lock()
		defer mu.Unlock()
		return err
	})
	if err == nil || !strings.Contains(err.Error(), "round 2") || !strings.Contains(err.Error(), "boom") {
		t.Errorf("failing round: %v", err)
	}
}

type failingRounds struct {
	*lsqTrainer
	failAt int
}

func (f *failingRounds) Round(ctx context.Context, r int, team *numa.Team) (bool, error) {
	if r == f.failAt && f.comm.Rank() == 1 {
		return false, errors.New("boom")
	}
	return f.lsqTrainer.Round(ctx, r, team)
}
