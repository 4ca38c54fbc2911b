// Package cli is what xmc's programs (xmc, and xmc-bench beside it) share
// of their command lines: subcommands, flag sets whose usage names the
// program, and usage errors, so that both answer -h, bad flags and unknown
// commands alike and exit with the same statuses: 0, 1 for an error, 2 for
// a usage error.
package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
)

// Command is one subcommand of a program.
type Command struct {
	// Name is the word that selects it, and Summary says in a line of the
	// program's help what it does.
	Name, Summary string
	// Run runs it with the arguments after its name.
	Run func(args []string) error
}

// ErrUsage marks an error already reported to the user by the flag
// package or a usage text: the program exits with status 2 and adds
// nothing.
var ErrUsage = errors.New("usage")

// Program is a program of subcommands.
type Program struct {
	// Name is the program's name in messages ("xmc", "xmc-bench"), and
	// About the text of its help before the list of commands.
	Name, About string
	Commands    []Command
}

// Run runs the subcommand args[0] with the rest of args and returns the
// program's exit status; its error, if any, goes to stderr prefixed with
// the program and the command. The status of an error is 1, or 2 for
// ErrUsage, or what its ExitStatus method returns where one in its chain
// has one. No arguments, or help, prints the help.
func (p Program) Run(args []string, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
		p.usage(stderr)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	for _, c := range p.Commands {
		if c.Name != args[0] {
			continue
		}
		err := c.Run(args[1:])
		switch {
		case err == nil, errors.Is(err, flag.ErrHelp):
			return 0
		case errors.Is(err, ErrUsage):
			return 2
		}
		fmt.Fprintf(stderr, "%s %s: %v\n", p.Name, c.Name, err)
		var status interface{ ExitStatus() int }
		if errors.As(err, &status) {
			return status.ExitStatus()
		}
		return 1
	}
	fmt.Fprintf(stderr, "%s: unknown command %q\n\n", p.Name, args[0])
	p.usage(stderr)
	return 2
}

// usage writes the program's help: About, then a line per command.
func (p Program) usage(w io.Writer) {
	fmt.Fprintf(w, "%s\nCommands:\n", p.About)
	for _, c := range p.Commands {
		fmt.Fprintf(w, "  %-8s %s\n", c.Name, c.Summary)
	}
	fmt.Fprintf(w, "\nRun \"%s <command> -h\" for a command's flags.\n", p.Name)
}

// NewFlagSet returns the flag set of a command of program prog whose usage
// text starts with synopsis ("train --data FILE [flags]").
func NewFlagSet(prog, name, synopsis string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: %s %s\n\n", prog, synopsis)
		fs.PrintDefaults()
	}
	return fs
}

// Parse parses args, mapping a parse error to ErrUsage (the flag package
// has already printed it) and rejecting stray arguments unless positional
// is true.
func Parse(fs *flag.FlagSet, args []string, positional bool) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return ErrUsage
	}
	if !positional && fs.NArg() > 0 {
		fmt.Fprintf(fs.Output(), "%s: unexpected argument %q\n", fs.Name(), fs.Arg(0))
		fs.Usage()
		return ErrUsage
	}
	return nil
}

// IntList parses the value s of flag flagName, a comma-separated list of
// positive integers ("1,2,4").
func IntList(flagName, s string) ([]int, error) {
	var out []int
	for f := range strings.SplitSeq(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			return nil, fmt.Errorf("--%s %q: want positive integers separated by commas, e.g. 1,2,4", flagName, s)
		}
		out = append(out, n)
	}
	return out, nil
}

// SignalContext is cancelled by SIGINT or SIGTERM (Slurm's scancel), so
// that a command that runs jobs ends the running one cleanly.
func SignalContext() (context.Context, context.CancelFunc) {
	return signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
}

// FlagValue returns the value args give the flag name (as -name v,
// --name v, -name=v or --name=v; the last one wins), or def.
func FlagValue(args []string, name, def string) string {
	v := def
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			break
		}
		for _, prefix := range []string{"-" + name, "--" + name} {
			switch {
			case a == prefix && i+1 < len(args):
				v = args[i+1]
			case strings.HasPrefix(a, prefix+"="):
				v = a[len(prefix)+1:]
			}
		}
	}
	return v
}
