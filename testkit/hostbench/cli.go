package hostbench

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"
	"strconv"
	"strings"
	"syscall"
)

// ErrUsage is a run's answer to wrong flags, already reported: the
// command exits 2.
var ErrUsage = errors.New("usage")

// Signals returns a context that the first SIGINT or SIGTERM cancels and
// a channel that the second closes: a benchmark cleans up after the first
// and stops waiting for choird's graceful stop after the second. name
// prefixes the note it writes to stderr.
func Signals(name string, stderr io.Writer) (context.Context, <-chan struct{}, context.CancelFunc) {
	ctx, cancel := context.WithCancel(context.Background())
	force := make(chan struct{})
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	go func() {
		<-sigs
		fmt.Fprintf(stderr, "%s: interrupted: cleaning up (a second signal kills choird instead of waiting for its graceful stop)\n", name)
		cancel()
		<-sigs
		close(force)
	}()
	return ctx, force, cancel
}

// ExitStatus is the exit status for run's error, which it reports: 0 for
// none and for a stop on a signal (cancellation is a clean stop), 2 for
// ErrUsage, 1 for anything else.
func ExitStatus(name string, err error, stderr io.Writer) int {
	switch {
	case errors.Is(err, ErrUsage):
		return 2
	case err != nil && !errors.Is(err, context.Canceled):
		fmt.Fprintf(stderr, "%s: %v\n", name, err)
		return 1
	}
	return 0
}

// ParseFlags parses args with fs, which takes no arguments beyond its
// flags. done says the run ends here with err: nil after -help, ErrUsage
// after a wrong flag or a stray argument (both reported on stderr).
func ParseFlags(fs *flag.FlagSet, args []string, stderr io.Writer) (done bool, err error) {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return true, nil
		}
		return true, ErrUsage
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "%s: unexpected argument %q\n", fs.Name(), fs.Arg(0))
		return true, ErrUsage
	}
	return false, nil
}

// ParseCounts reads the comma-separated numbers of agents of the flag
// named name ("-n"): positive (1_000 reads as 1000), returned distinct and
// ascending, none for an empty list.
func ParseCounts(name, list string) ([]int, error) {
	seen := map[int]bool{}
	var ns []int
	for _, f := range strings.Split(list, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		n, err := strconv.Atoi(strings.ReplaceAll(f, "_", ""))
		if err != nil || n < 1 {
			return nil, fmt.Errorf("%s: %q is not a positive number of agents", name, f)
		}
		if !seen[n] {
			seen[n] = true
			ns = append(ns, n)
		}
	}
	sort.Ints(ns)
	return ns, nil
}
