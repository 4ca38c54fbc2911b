package main

import (
	"runtime/debug"
	"strings"
	"testing"
)

func TestVersionWith(t *testing.T) {
	rev := []debug.BuildSetting{{Key: "vcs", Value: "git"}, {Key: "vcs.revision", Value: "5998e44d1f2a9b0c7e6d5f4a3b2c1d0e9f8a7b6c"}}
	for _, tc := range []struct {
		name     string
		settings []debug.BuildSetting
		want     string
	}{
		{"no vcs record", nil, "0.1.0-dev"},
		{"clean checkout", append(rev, debug.BuildSetting{Key: "vcs.modified", Value: "false"}), "0.1.0-dev+5998e44d1f2a"},
		{"modified checkout", append(rev, debug.BuildSetting{Key: "vcs.modified", Value: "true"}), "0.1.0-dev+5998e44d1f2a.modified"},
		{"short revision", []debug.BuildSetting{{Key: "vcs.revision", Value: "abc"}}, "0.1.0-dev+abc"},
	} {
		if got := versionWith("0.1.0-dev", tc.settings); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}

// TestVersionCommand checks that xmc version and a run summary name the
// same build: the test binary is built in the repository's checkout.
func TestVersionCommand(t *testing.T) {
	out := strings.TrimSpace(mustXMC(t, "version"))
	v, ok := strings.CutPrefix(out, "xmc ")
	if !ok || !strings.HasPrefix(v, version) {
		t.Fatalf("xmc version printed %q, want xmc %s...", out, version)
	}
	dir := t.TempDir()
	summary := dir + "/run.json"
	mustXMC(t, "train", "--algo", "dismec", "--data", bibtexTrain, "--model-out", dir+"/dismec.model", "--checkpoint", "none", "--summary", summary)
	if got := readSummary(t, summary).Version; got != v {
		t.Errorf("summary's xmc_version %q, want %q as xmc version prints", got, v)
	}
}
