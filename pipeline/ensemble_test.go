package pipeline

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"xmc/job"
	"xmc/model"
	"xmc/model/ensemble"
	"xmc/model/kinds"
)

// ensembleConfig returns an ensemble of a 3-tree forest and PPDSparse on
// Bibtex, fitted on 10% of the rows, writing to dir/e.model.
func ensembleConfig(t *testing.T, dir string) EnsembleTrainConfig {
	t.Helper()
	var members []EnsembleMember
	for _, algo := range []string{"forest", "ppdsparse"} {
		c := config(t, algo, quickAlgorithms[algo]...)
		members = append(members, EnsembleMember{Algorithm: algo, Trainer: c.Trainer})
	}
	train := config(t, "forest")
	train.ModelOut = filepath.Join(dir, "e.model")
	return EnsembleTrainConfig{Train: train, Members: members, Heldout: 0.1}
}

// predictScores predicts Bibtex's test set with models on ranks ranks,
// predicting on on, and returns the score file.
func predictScores(t *testing.T, models []string, ranks int, on string) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), "scores.txt")
	p := PredictConfig{Models: models, DataPath: bibtexTest, Out: out, PredictOn: on,
		Eval: DefaultEvalOptions(), Input: Input{SplitCol: 1}}
	if err := Predict(options(ranks), p); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// trainPPDSparseEnsemble trains, on ranks ranks, the ensemble of
// PPDSparse alone in dir, and returns its configuration and the member's
// path.
func trainPPDSparseEnsemble(t *testing.T, dir string, ranks int) (EnsembleTrainConfig, string) {
	t.Helper()
	c := ensembleConfig(t, dir)
	c.Members = c.Members[1:]
	if err := TrainEnsemble(options(ranks), c); err != nil {
		t.Fatal(err)
	}
	return c, MemberPath(c.Train.ModelOut, 0, "ppdsparse")
}

// TestEnsembleSameOnAnyRanks trains the ensemble on 1 and on 3 ranks: the
// ensemble file (members' weights and calibrations) and the members are
// the same bytes, and Predict of the ensemble on 1 and 2 ranks, and by
// rank 0 alone, gives the same scores.
func TestEnsembleSameOnAnyRanks(t *testing.T) {
	var files [][]byte
	var scores []string
	for _, ranks := range []int{1, 3} {
		dir := t.TempDir()
		c := ensembleConfig(t, dir)
		if err := TrainEnsemble(options(ranks), c); err != nil {
			t.Fatalf("%d ranks: %v", ranks, err)
		}
		for _, p := range []string{c.Train.ModelOut, MemberPath(c.Train.ModelOut, 0, "forest"), MemberPath(c.Train.ModelOut, 1, "ppdsparse")} {
			b, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			files = append(files, b)
		}
		for _, pr := range []struct {
			ranks int
			on    string
		}{{1, PredictOnRanks}, {2, PredictOnRanks}, {2, PredictOnRoot}} {
			scores = append(scores, predictScores(t, []string{c.Train.ModelOut}, pr.ranks, pr.on))
		}
	}
	for i := 3; i < len(files); i++ {
		if !bytes.Equal(files[i], files[i%3]) {
			t.Errorf("file %d of the 3-rank training differs from the 1-rank one's", i%3)
		}
	}
	for i, s := range scores[1:] {
		if s != scores[0] {
			t.Errorf("prediction %d differs from the first", i+1)
		}
	}
}

// TestEnsembleOfOne checks that an ensemble fitted with one member scores
// as that member alone, byte for byte, and that several --model files
// make an ensemble of equal weights.
func TestEnsembleOfOne(t *testing.T) {
	c, member := trainPPDSparseEnsemble(t, t.TempDir(), 2)
	if predictScores(t, []string{c.Train.ModelOut}, 2, PredictOnRanks) != predictScores(t, []string{member}, 2, PredictOnRanks) {
		t.Error("the ensemble of one member scores otherwise than the member")
	}
	m, h, err := loadModels([]string{member, member}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if model.KindName(h) != ensemble.KindName || !strings.Contains(m.Summary(), "2 members") {
		t.Errorf("two --model files: kind %q, %s", model.KindName(h), m.Summary())
	}
}

// TestEnsembleErrors checks the errors of a bad ensemble: a missing
// member, a member trained again, members of other label spaces, a
// --heldout that holds out no row.
func TestEnsembleErrors(t *testing.T) {
	dir := t.TempDir()
	c, member := trainPPDSparseEnsemble(t, dir, 1)
	other := filepath.Join(dir, "other.model")
	oc := config(t, "ppdsparse", "--labels-per-unit", "40", "--cost", "2")
	oc.ModelOut = other
	if err := Train(options(1), oc); err != nil {
		t.Fatal(err)
	}
	delicious := filepath.Join(dir, "delicious.model")
	dc := config(t, "ppdsparse", "--labels-per-unit", "400")
	dc.DataPath, dc.ModelOut = "../testdata/delicious/train.txt", delicious
	if err := Train(options(1), dc); err != nil {
		t.Fatal(err)
	}
	if _, _, err := loadModels([]string{member, delicious}, nil); err == nil || !strings.Contains(err.Error(), "one label space") {
		t.Errorf("members of 159 and 983 labels: %v", err)
	}
	fit := EnsembleConfig{Models: []string{member, delicious}, HeldoutPath: bibtexTest, Out: filepath.Join(dir, "bad.model"), TopK: 5, Input: Input{SplitCol: 1}}
	if err := FitEnsemble(options(1), fit); err == nil {
		t.Error("xmc ensemble of two label spaces succeeded")
	}
	if _, err := os.Stat(fit.Out); !os.IsNotExist(err) {
		t.Errorf("a failed ensemble left %s: %v", fit.Out, err)
	}
	if err := os.Rename(other, member); err != nil {
		t.Fatal(err)
	}
	if _, _, err := kinds.Load(c.Train.ModelOut, nil); err == nil || !strings.Contains(err.Error(), "make the ensemble again") {
		t.Errorf("a member trained again: %v", err)
	}
	if err := os.Remove(member); err != nil {
		t.Fatal(err)
	}
	if _, _, err := kinds.Load(c.Train.ModelOut, nil); err == nil || !strings.Contains(err.Error(), "member 0") {
		t.Errorf("a missing member: %v", err)
	}
	// A fraction that holds out no row fails before any member trains.
	none := ensembleConfig(t, t.TempDir())
	none.Heldout = 1e-9
	if err := TrainEnsemble(options(1), none); err == nil || !strings.Contains(err.Error(), "--heldout 1e-09 of 4880 rows holds out none") {
		t.Errorf("no held-out row: %v", err)
	}
	if _, err := os.Stat(MemberPath(none.Train.ModelOut, 0, "forest")); !os.IsNotExist(err) {
		t.Errorf("a member was trained with no held-out row: %v", err)
	}
}

// TestEnsembleMemberResume checks that a member trained by a run before,
// with the same algorithm, parameters and rows, is kept rather than
// trained again, that one of other parameters is trained again, and that
// a finished ensemble leaves no checkpoint behind.
func TestEnsembleMemberResume(t *testing.T) {
	dir := t.TempDir()
	c := ensembleConfig(t, dir)
	c.Train.Checkpoint = filepath.Join(dir, "e.model.ckpt")
	mc := c.memberConfig(0, c.Members[0])
	long := time.Now().Add(-time.Hour).Truncate(time.Second)
	train := func(mc TrainConfig) (modified time.Time) {
		t.Helper()
		err := job.Run("train", options(2), func(j *job.Rank) error {
			tr, err := trainMember(j, c.Train.Checkpoint, 0, mc)
			if err == nil && tr.held == nil {
				err = errors.New("no held-out rows")
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		info, err := os.Stat(mc.ModelOut)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(mc.ModelOut, long, long); err != nil {
			t.Fatal(err)
		}
		return info.ModTime()
	}
	train(mc)
	if got := train(mc); !got.Equal(long) {
		t.Errorf("the member was trained again (model written at %v)", got)
	}
	other := mc
	other.Seed++
	if got := train(other); got.Equal(long) {
		t.Error("a member of another seed was not trained again")
	}
	if err := TrainEnsemble(options(1), c); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(c.Train.Checkpoint); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the finished ensemble left its checkpoint: %v", err)
	}
}
