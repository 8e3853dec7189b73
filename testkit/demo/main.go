// Command demo is `make demo`: on a fresh machine it runs a whole choir
// agent in a real container and lets you talk to it, with nothing
// configured by hand, then removes everything it started.
//
// It uses the Docker engine it finds (DOCKER_HOST, /var/run/docker.sock) or
// starts a private one; the Postgres of CHOIR_DATABASE_URL or an embedded
// PGlite; a Debian base image made with debootstrap (cached); and, unless
// CHOIR_LLM_ENDPOINT and CHOIR_LLM_KEY (and optionally CHOIR_LLM_MODEL)
// name a real OpenAI-compatible model, the offline demo model
// (testkit/demomodel), which says so. It creates a throwaway ~/.choir.d
// (or uses CHOIR_DEMO_HOME), a global repo and an agent repo with choirctl
// init and agent init plus a demo identity and an example skill, starts
// choird, builds and starts the agent, and opens `choirctl chat`.
//
// Files the agent sends are saved in CHOIR_DEMO_FILES (default
// choir-demo-files in the temp directory), which the demo leaves in place.
//
// With stdin not a terminal (or --script), each input line is one
// message sent with `choirctl chat --once --wait-cores` and the replies are
// printed: that is how the demo's end-to-end test drives it.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	if err != nil && !errors.Is(err, context.Canceled) {
		fmt.Fprintf(os.Stderr, "demo: %v\n", err)
		os.Exit(1)
	}
}

type options struct {
	bin       string // where choird, choirctl and choir-agent are
	script    bool   // stdin holds messages, one per line
	keepHome  bool
	repoRoot  string // the choir checkout (for testkit scripts)
	stdin     io.Reader
	stdout    io.Writer
	stderr    io.Writer
	llm       llmChoice
	demoHome  string
	database  string
	dockerEnv string
}

type llmChoice struct{ endpoint, key, model string }

func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	o := options{stdin: stdin, stdout: stdout, stderr: stderr}
	fs := flag.NewFlagSet("demo", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.bin, "bin", "bin", "the directory holding choird, choirctl and choir-agent (make build)")
	fs.BoolVar(&o.script, "script", !isTerminal(os.Stdin), "read messages from stdin, one per line, instead of an interactive chat")
	fs.StringVar(&o.repoRoot, "repo", ".", "the choir checkout")
	if err := fs.Parse(args); err != nil {
		return err
	}
	o.llm = llmChoice{os.Getenv("CHOIR_LLM_ENDPOINT"), os.Getenv("CHOIR_LLM_KEY"), os.Getenv("CHOIR_LLM_MODEL")}
	o.demoHome = os.Getenv("CHOIR_DEMO_HOME")
	o.keepHome = o.demoHome != ""
	o.database = os.Getenv("CHOIR_DATABASE_URL")
	d := &demo{options: o}
	defer d.teardown()
	return d.run(ctx)
}

func isTerminal(f *os.File) bool {
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}
