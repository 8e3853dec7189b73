// Command choird is choir's host daemon: the only authority on the host. It
// validates .choir.d/, serves choirctl on the admin socket and agents on the
// control socket (or HTTPS), and runs the startup sequence of §6.2.
//
// Usage:
//
//	choird [--home DIR] [--replica] [--transport uds|http] [--listen ADDR] [--tls-cert F --tls-key F [--tls-ca F]]
//	choird --check [--home DIR]
//	choird --doctor [--json] [--home DIR]
package main

import (
	"bytes"
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
	os.Exit(realMain(os.Args[1:], os.Stdout, os.Stderr))
}

func realMain(args []string, stdout, stderr io.Writer) int {
	opts, err := parseFlags(args, stdout, stderr)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if opts.check {
		return check(opts, stdout, stderr)
	}
	if opts.doctor {
		return doctor(opts, stdout, stderr)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	go forceOnSecondSignal(ctx, stderr)
	if err := run(ctx, opts, stderr); err != nil {
		fmt.Fprintf(stderr, "choird: %v\n", err)
		return 1
	}
	return 0
}

// forceOnSecondSignal exits at once when a signal arrives after the first
// one started a clean stop.
func forceOnSecondSignal(ctx context.Context, stderr io.Writer) {
	<-ctx.Done()
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, syscall.SIGINT, syscall.SIGTERM)
	<-ch
	fmt.Fprintln(stderr, "choird: second signal, exiting without a clean stop")
	os.Exit(1)
}

type options struct {
	home      string
	check     bool
	doctor    bool
	json      bool
	transport string
	listen    string
	tlsCert   string
	tlsKey    string
	tlsCA     string
	logLevel  string
	agentBin  string
	replica   bool
}

// parseFlags parses choird's command line. -h and --help print the usage on
// stdout (and parseFlags returns flag.ErrHelp); a mistake prints it on stderr.
func parseFlags(args []string, stdout, stderr io.Writer) (options, error) {
	var o options
	fs := flag.NewFlagSet("choird", flag.ContinueOnError)
	var out bytes.Buffer
	fs.SetOutput(&out)
	fs.StringVar(&o.home, "home", "", "state directory (default $CHOIR_HOME, else ~/.choir.d)")
	fs.BoolVar(&o.check, "check", false, "validate config.json and secrets.json, print every problem, and exit (1 when invalid)")
	fs.BoolVar(&o.doctor, "doctor", false, "check the installation (config, files, sockets, engine, Postgres, images, a running choird, logs, clock), print one line a check, and exit (1 when a check fails); touches nothing")
	fs.BoolVar(&o.json, "json", false, "with --doctor: print the report as JSON")
	fs.StringVar(&o.transport, "transport", "uds", "how agents reach choird: uds (the control socket) or http (--listen, TLS)")
	fs.StringVar(&o.listen, "listen", "", "with --transport=http: the address to listen on (default: the engine's bridge gateway, port 9400, where containers reach it)")
	fs.StringVar(&o.tlsCert, "tls-cert", "", "with --transport=http: TLS certificate file (default: one choird signs with its own CA in <home>/tls)")
	fs.StringVar(&o.tlsKey, "tls-key", "", "with --transport=http: TLS key file")
	fs.StringVar(&o.tlsCA, "tls-ca", "", "with --tls-cert: the CA certificates agents trust for it (default: the certificate itself)")
	fs.StringVar(&o.logLevel, "log-level", "info", "debug, info, warn or error")
	fs.BoolVar(&o.replica, "replica", false, "one of two choird replicas against one Postgres: poll Telegram and run the schedulers only while holding the leader lock (see README, two replicas)")
	fs.StringVar(&o.agentBin, "agent-binary", "", "the static choir-agent that agent builds put in base images (default: choir-agent beside choird)")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: choird [--home DIR] [--transport uds|http] [--listen ADDR] [--tls-cert FILE --tls-key FILE [--tls-ca FILE]] [--log-level LEVEL]\n       choird --check [--home DIR]\n       choird --doctor [--json] [--home DIR]")
		fs.PrintDefaults()
	}
	err := fs.Parse(args)
	if errors.Is(err, flag.ErrHelp) {
		stdout.Write(out.Bytes())
		return o, err
	}
	stderr.Write(out.Bytes())
	fs.SetOutput(stderr)
	if err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "choird: unexpected argument %q\n", fs.Arg(0))
		fs.Usage()
		return o, errors.New("usage")
	}
	if o.json && !o.doctor {
		fmt.Fprintln(stderr, "choird: --json goes with --doctor")
		return o, errors.New("usage")
	}
	if o.transport != "uds" && o.transport != "http" {
		fmt.Fprintf(stderr, "choird: --transport=%q: want uds or http\n", o.transport)
		return o, errors.New("usage")
	}
	return o, nil
}
