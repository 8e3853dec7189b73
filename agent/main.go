// Command choir-agent is the runtime inside an agent's container: one static
// binary that keeps the session with choird and runs the edge and core
// lanes, the arbiter, the lock manager and the tools.
//
// Its identity comes from the environment choird sets at container start
// (CHOIR_AGENT_ID, CHOIR_SESSION_ID, CHOIR_LEASE_TOKEN; never a secret): the
// lease token is scoped to this session and dies with it. It is read once
// and removed from the environment (or, on a Swarm node, read from the
// secret file --lease-token-file names, on a tmpfs and readable by root
// only, and then not in the environment at all; there its client
// certificate for mutual TLS, --tls-cert and --tls-key, is two more such
// files, and it renews the certificate half-way through its life); before any tool runs, the agent enters
// its sandbox (agent/sandbox): non-dumpable, and every tool process under
// the workspace owner's uid. Secrets arrive over the control protocol and
// stay in memory.
//
// Usage:
//
//	choir-agent --control-plane=uds  --socket=/run/choir/choird.sock
//	choir-agent --control-plane=http --endpoint=https://choird.internal:9400 [--tls-ca=FILE] [--tls-cert=FILE --tls-key=FILE] [--lease-token-file=FILE]
//	choir-agent --choir-launch NPROC PATH [ARG...]   (the tool launcher; agent/sandbox)
//	git-cred-helper get|store|erase|ssh ARGS         (a link to choir-agent: git's credential helper; agent/gitident)
package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"choir/agent/assembly"
	"choir/agent/gitident"
	"choir/agent/redact"
	"choir/agent/sandbox"
	"choir/agent/session"
	mcptool "choir/agent/tool/mcp"
	"choir/internal/manifest"
	"choir/internal/mcpdecl"
	"choir/internal/rpc"
)

// Environment set by choird at container start.
const (
	envAgentID     = "CHOIR_AGENT_ID"
	envSessionID   = "CHOIR_SESSION_ID"
	envLeaseToken  = "CHOIR_LEASE_TOKEN"
	envHeartbeatMS = "CHOIR_HEARTBEAT_MS"
)

func main() {
	if filepath.Base(os.Args[0]) == gitident.HelperName {
		// choir-agent as git's credential helper and ssh command (§14.4),
		// run by git in a tool process: it asks the running agent.
		os.Exit(gitident.Main(gitident.Dir, os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
	}
	if len(os.Args) > 1 && os.Args[1] == sandbox.IdleArg {
		for { // the sandbox's probe kills it
			time.Sleep(time.Hour)
		}
	}
	if len(os.Args) > 1 && os.Args[1] == sandbox.LaunchArg {
		// choir-agent as the launcher of a tool process (agent/sandbox).
		err := sandbox.Launch(os.Args[2:])
		fmt.Fprintln(os.Stderr, "choir-agent:", err)
		os.Exit(127)
	}
	if len(os.Args) > 1 && os.Args[1] == mcptool.ListArg {
		// choird's build pinning the MCP servers' tool lists (agent/tool/mcp).
		os.Exit(mcptool.ListMain(mcpdecl.Dir, os.Args[2:], os.Stdout, os.Stderr))
	}
	os.Exit(realMain(os.Args[1:], os.Getenv, os.Stderr))
}

type options struct {
	controlPlane string
	socket       string
	endpoint     string
	tlsCA        string
	tlsCert      string
	tlsKey       string
	tokenFile    string
	versionFile  string
	choirDir     string
	workspace    string
}

func realMain(args []string, getenv func(string) string, stderr io.Writer) int {
	var o options
	fs := flag.NewFlagSet("choir-agent", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.controlPlane, "control-plane", rpc.TransportUDS, "how to reach choird: uds or http")
	fs.StringVar(&o.socket, "socket", "/run/choir.sock", "with uds: the control socket")
	fs.StringVar(&o.endpoint, "endpoint", "", "with http: choird's URL, e.g. https://choird.internal:9400")
	fs.StringVar(&o.tlsCA, "tls-ca", "", "with http: a PEM file of CA certificates to trust for choird")
	fs.StringVar(&o.tlsCert, "tls-cert", "", "with http: the session's client certificate (PEM), for a choird that requires one")
	fs.StringVar(&o.tlsKey, "tls-key", "", "with http: the client certificate's key (PEM)")
	fs.StringVar(&o.tokenFile, "lease-token-file", "", "the file holding the session's lease token, instead of "+envLeaseToken+" (a Swarm secret)")
	fs.StringVar(&o.versionFile, "version-file", rpc.ImageVersionFile, "the image's version metadata")
	fs.StringVar(&o.choirDir, "choir-dir", "/choir", "the image's tools, skills and identity files")
	fs.StringVar(&o.workspace, "workspace", "/workspace", "the workspace the tools work in")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	log := slog.New(slog.NewJSONHandler(stderr, nil))
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	// run sets red once the session holds secrets: from then on, what this
	// function logs passes the session's redaction too.
	var red *redact.Redactor
	if err := run(ctx, o, getenv, log, &red); err != nil {
		if red != nil {
			log = red.Logger(log)
		}
		log.Error("choir-agent stopped", "error", err.Error())
		return 1
	}
	log.Info("choir-agent stopped")
	return 0
}

func run(ctx context.Context, o options, getenv func(string) string, log *slog.Logger, red **redact.Redactor) error {
	id := session.Identity{AgentID: getenv(envAgentID), SessionID: getenv(envSessionID)}
	token := getenv(envLeaseToken)
	if o.tokenFile != "" {
		if token != "" {
			return fmt.Errorf("both %s and --lease-token-file are set: choird sets one", envLeaseToken)
		}
		b, err := os.ReadFile(o.tokenFile)
		if err != nil {
			return fmt.Errorf("--lease-token-file: %w", err)
		}
		if token = strings.TrimSpace(string(b)); token == "" {
			return fmt.Errorf("--lease-token-file %s is empty", o.tokenFile)
		}
	}
	if id.AgentID == "" || id.SessionID == "" || token == "" {
		return fmt.Errorf("%s, %s and %s must be set (choird sets them when it starts the container)", envAgentID, envSessionID, envLeaseToken)
	}
	heartbeat := 5 * time.Second
	if v := getenv(envHeartbeatMS); v != "" {
		ms, err := strconv.Atoi(v)
		if err != nil || ms < 10 {
			return fmt.Errorf("%s=%q: want a number of milliseconds ≥ 10", envHeartbeatMS, v)
		}
		heartbeat = time.Duration(ms) * time.Millisecond
	}
	version, err := rpc.ReadImageInfo(o.versionFile)
	if err != nil {
		return err
	}
	// INIT_HELLO reports the manifests this image really holds, hashed as
	// the build hashes them, so that choird refuses an image altered after
	// its build (§15.1) whatever its version.json says.
	if version.ToolManifestHash, err = manifest.Dirs(filepath.Join(o.choirDir, "tools", "global"), filepath.Join(o.choirDir, "tools", "agent")); err != nil {
		return err
	}
	if version.SkillManifestHash, err = manifest.Dirs(filepath.Join(o.choirDir, "skills")); err != nil {
		return err
	}
	// The TLS files too are read before the sandbox: on a Swarm node they
	// are secret files only root may read, as the token's.
	tlsConf, clientCert, err := tlsConfig(o)
	if err != nil {
		return err
	}
	// Before any tool can run: the token leaves the environment (tools get
	// an allowlist anyway), the agent becomes unreadable and untraceable,
	// and tools will run as the workspace's owner.
	os.Unsetenv(envLeaseToken)
	sb, err := sandbox.Enter(o.workspace)
	if err != nil {
		return fmt.Errorf("tool sandbox: %w", err)
	}
	log.Info("tool sandbox ready", "tool_uid", sb.UID, "tool_gid", sb.GID, "tool_nproc", sb.NProc)
	if sb.NoNProc != "" {
		log.Warn("tools run without a process limit", "reason", sb.NoNProc)
	}
	cp, err := rpc.Dial(rpc.Options{
		Transport: o.controlPlane, Socket: o.socket, Endpoint: o.endpoint, TLS: tlsConf,
		SessionID: id.SessionID, LeaseToken: token,
	})
	if err != nil {
		return err
	}
	defer cp.Close()
	log = log.With("source", id.AgentID, "session_id", id.SessionID)
	if clientCert != nil {
		go clientCert.KeepRenewed(ctx, cp, time.Minute, func(err error) {
			log.Warn("client certificate not renewed; retrying in a minute", "error", err.Error(), "expires", clientCert.NotAfter())
		})
	}
	log.Info("choir-agent starting", "control_plane", o.controlPlane, "image_version", version.ImageVersion)
	startIdleTrim(ctx)
	sess := session.New(cp, id, version, heartbeat, log)
	*red = sess.Redactor
	acfg := assembly.Config{ChoirDir: o.choirDir, Workspace: o.workspace, Log: log,
		GitDir: gitident.Dir, GitHelper: filepath.Join(filepath.Dir(sb.Launcher), gitident.HelperName)}
	assembly.New(cp, sess, acfg).Attach() // it redacts with sess.Redactor
	return sess.Run(ctx)
}

// tlsConfig is the HTTP transport's TLS: the CA trusted for choird
// (--tls-ca) and the session's client certificate (--tls-cert, --tls-key),
// nil when none is given.
func tlsConfig(o options) (*tls.Config, *rpc.ClientCert, error) {
	if o.tlsCA == "" && o.tlsCert == "" && o.tlsKey == "" {
		return nil, nil, nil
	}
	conf := &tls.Config{}
	if o.tlsCA != "" {
		pem, err := os.ReadFile(o.tlsCA)
		if err != nil {
			return nil, nil, fmt.Errorf("--tls-ca: %w", err)
		}
		conf.RootCAs = x509.NewCertPool()
		if !conf.RootCAs.AppendCertsFromPEM(pem) {
			return nil, nil, fmt.Errorf("--tls-ca %s holds no PEM certificate", o.tlsCA)
		}
	}
	if (o.tlsCert == "") != (o.tlsKey == "") {
		return nil, nil, errors.New("--tls-cert and --tls-key go together")
	}
	if o.tlsCert == "" {
		return conf, nil, nil
	}
	cc, err := rpc.LoadClientCert(o.tlsCert, o.tlsKey)
	if err != nil {
		return nil, nil, err
	}
	conf.GetClientCertificate = cc.GetClientCertificate
	return conf, cc, nil
}
