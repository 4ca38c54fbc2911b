package cli

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"strings"
	"testing"
)

// TestProgram checks a program's exit statuses and messages: help, a
// command's success, its error, an error with a status of its own, its
// usage error, -h, and an unknown command.
func TestProgram(t *testing.T) {
	p := Program{Name: "prog", About: "prog does things.\n", Commands: []Command{
		{Name: "ok", Summary: "succeeds", Run: func([]string) error { return nil }},
		{Name: "fail", Summary: "fails", Run: func([]string) error { return errors.New("boom") }},
		{Name: "stop", Summary: "stops with a status of its own", Run: func([]string) error {
			return fmt.Errorf("stopped after 3 units: %w", statusError(3))
		}},
		{Name: "flags", Summary: "parses flags", Run: func(args []string) error {
			fs := NewFlagSet("prog", "flags", "flags [-n N]")
			fs.Int("n", 1, "a number")
			return Parse(fs, args, false)
		}},
	}}
	for _, c := range []struct {
		args []string
		code int
		want string // in stderr
	}{
		{nil, 2, "prog does things."},
		{[]string{"help"}, 0, "  fail     fails"},
		{[]string{"ok"}, 0, ""},
		{[]string{"fail"}, 1, "prog fail: boom"},
		{[]string{"stop"}, 3, "prog stop: stopped after 3 units: status 3"},
		{[]string{"flags", "-n", "x"}, 2, ""},
		{[]string{"flags", "stray"}, 2, ""},
		{[]string{"flags", "-h"}, 0, ""},
		{[]string{"nope"}, 2, `prog: unknown command "nope"`},
	} {
		var stderr bytes.Buffer
		if code := p.Run(c.args, &stderr); code != c.code || !strings.Contains(stderr.String(), c.want) {
			t.Errorf("%q: exit %d, stderr %q; want %d and %q", c.args, code, stderr.String(), c.code, c.want)
		}
	}
	var out bytes.Buffer
	fs := NewFlagSet("prog", "flags", "flags [-n N]")
	fs.SetOutput(&out)
	if err := Parse(fs, []string{"-h"}, false); !errors.Is(err, flag.ErrHelp) || !strings.Contains(out.String(), "Usage: prog flags [-n N]") {
		t.Errorf("-h: %v, usage %q", err, out.String())
	}
}

// TestIntList checks the parsing of comma-separated positive integers.
func TestIntList(t *testing.T) {
	if got, err := IntList("ranks", "1, 2,4"); err != nil || len(got) != 3 || got[2] != 4 {
		t.Errorf("1, 2,4: %v, %v", got, err)
	}
	for _, bad := range []string{"", "0", "1,,2", "a"} {
		if _, err := IntList("ranks", bad); err == nil || !strings.Contains(err.Error(), "--ranks") {
			t.Errorf("%q: %v, want an error naming --ranks", bad, err)
		}
	}
}

func TestFlagValue(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--algo", "dismec"}, "dismec"},
		{[]string{"-algo=ppdsparse", "--data", "x"}, "ppdsparse"},
		{[]string{"--algo", "a", "--algo=b"}, "b"},
		{[]string{"--data", "algo"}, "def"},
		{[]string{"--", "--algo", "x"}, "def"},
		{[]string{"--algo"}, "def"},
	} {
		if got := FlagValue(c.args, "algo", "def"); got != c.want {
			t.Errorf("FlagValue(%q) = %q, want %q", c.args, got, c.want)
		}
	}
}

// statusError is an error with an exit status of its own.
type statusError int

func (e statusError) Error() string   { return fmt.Sprintf("status %d", int(e)) }
func (e statusError) ExitStatus() int { return int(e) }
