package main

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"time"

	"choir/choird/build"
	"choir/choird/control"
	"choir/choird/headless"
	"choir/choird/lifecycle"
	"choir/internal/config"
	"choir/internal/ctl"
	"choir/internal/docker"
	"choir/internal/logs"
	"choir/internal/rpc"
)

// shutdownGrace bounds how long open requests may finish at stop.
const shutdownGrace = 5 * time.Second

// agentStopTimeout bounds each agent's graceful stop when choird stops.
const agentStopTimeout = time.Minute

// run is choird's life: the startup sequence of §6.2, serving, clean stop.
func run(ctx context.Context, o options, stderr io.Writer) error {
	home, err := resolveHome(o.home)
	if err != nil {
		return err
	}
	if fi, err := os.Stat(home.Dir); err != nil || !fi.IsDir() {
		return fmt.Errorf("%s does not exist: run `choirctl init` first", home.Dir)
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(o.logLevel)); err != nil {
		return fmt.Errorf("--log-level=%q: want debug, info, warn or error", o.logLevel)
	}
	lm, err := logs.NewManager(home.LogsDir(), config.DefaultTunables().LogArchiveThresholdLines, level, logs.NewRedactor())
	if err != nil {
		return err
	}
	defer lm.Close()
	lm.StartPruning() // logs/archive/ pruned daily, within the limits SetConfig installs
	lm.ChoirdFile().Mirror(journalMirror(stderr, os.Getenv("JOURNAL_STREAM")))
	log := lm.Choird()
	plane := control.New(home, lm)
	log.Info("choird starting", "pid", os.Getpid(), "home", home.Dir)
	// Under systemd (Type=notify): STATUS lines while starting, READY once
	// the admin socket serves, STOPPING when the stop begins, and the
	// watchdog fed for choird's whole life, stop included.
	svc := startService(log)
	defer svc.stop()
	svc.status("reading the configuration")

	if err := loadConfig(home, plane); err != nil {
		log.Error("choird cannot start: invalid configuration", logs.KeyError, err.Error())
		return fmt.Errorf("invalid configuration (see `choird --check`):\n%s", indentProblems(err))
	}
	svc.status("connecting to Postgres")
	st, err := openStore(ctx, plane)
	if err != nil {
		return fmt.Errorf("cannot start without Postgres: %w", err)
	}
	defer st.Close()
	st.CallsStored = callCounter{loaded: plane.Config}.stored // metrics_calls.go: choir_llm_* from the ledger's rows
	svc.status("reconciling agent containers with the Docker engine")
	agentsMgr, dc, err := startLifecycle(ctx, plane, st, lm, home, o.replica, log)
	if err != nil {
		return fmt.Errorf("cannot start: %w", err)
	}
	defer dc.Close()
	agentsMgr.Health = plane.Degraded
	spend := newLedger(plane, st, agentsMgr, log.With(logs.KeySystem, "ledger")) // spend.go: SPEND and the caps
	spendRPC := &spendPlane{ControlPlaneHandler: agentsMgr.Handler(), ledger: spend, agents: agentsMgr}
	mem, stopMemory, err := startMemory(plane, st, spend, spendRPC.agent, log.With(logs.KeySystem, "memory"))
	if err != nil {
		return fmt.Errorf("cannot start the embedding pipeline: %w", err)
	}
	defer stopMemory()
	agentsMgr.SessionClosed = mem.SessionEnded
	plane.SetUsage(usageView{st: st, ledger: spend, config: func() *config.Config { return plane.Config().Config }})
	director := headless.New(st.Headless()) // headless runs: work items, runs, receipts (seed 002)
	director.KnownAgent = func(id string) bool { _, ok := plane.Config().Config.Agents[id]; return ok }
	plane.SetDirector(director)
	// headless_runs.go: a run that waits for a human is decided by an approval
	gate := runGate(director, home, log.With(logs.KeySystem, "headless"))
	kbase, stopKB := startKB(plane, st, director, mem.Embedder(), home, log.With(logs.KeySystem, "kb")) // kb.go: the runs' knowledge base
	defer stopKB()
	rpcServer := rpc.NewServer(spendRPC, agentLimits(len(plane.Config().Config.Agents), log.With(logs.KeySystem, "rpc")), log.With(logs.KeySystem, "rpc")) // files.go
	rpcServer.Observe = countRPC                                                                                                                           // metrics.go
	// modelproxy.go: the agents' model calls, carried with the keys choird holds
	rpcServer.Models = &modelProxy{config: plane.Config, sessions: agentsMgr, log: log.With(logs.KeySystem, "modelproxy")}
	// tunnel.go: an offline agent's own connections, to its configured endpoints only
	rpcServer.Tunnels = &tunnelPolicy{config: plane.Config, sessions: agentsMgr, log: log.With(logs.KeySystem, "tunnel")}
	agentsMgr.NetworkAttempts = netAttemptsNotice(plane, agentsMgr, log) // tunnel.go
	agentsMgr.Sessions, agentsMgr.Sockets = rpcServer, rpcServer
	builder := &build.Builder{Docker: dc, Home: home, AgentBinary: agentBinary(o.agentBin), Records: imageStore{st},
		Secrets: func() config.Secrets { return plane.Config().Secrets }} // the MCP pinning's (build/mcp_secrets.go)
	builder.Publish = publisher(agentsMgr.Runtime) // runtime.go: the swarm runtime's registry
	agentsMgr.Images = imageStore{st}
	plane.SetAgents(agentsMgr)
	plane.SetMessenger(agentsMgr)
	plane.SetBuilder(builder)
	plane.SetChecker(builder)
	plane.SetSessions(sessionLog{st}, agentsMgr)
	memTools := memoryTools(st, mem)
	agentsMgr.HostTools = memTools.HostTools()
	stopBrowser := startBrowser(agentsMgr, log.With(logs.KeySystem, "browser"))
	defer stopBrowser()
	agentsMgr.HostTools[HostToolMCPNotice] = mcpNoticeTool(plane, agentsMgr, log.With(logs.KeySystem, "mcp")) // mcp_notice.go
	// headless_tools.go: a run session's notes, split and spec change requests
	registerKBTool(agentsMgr, st, director, kbase) // kb.go: choir.kb.search in run sessions
	if err := registerRunTools(agentsMgr, st, director, home, log.With(logs.KeySystem, "headless")); err != nil {
		return err
	}
	// net_fetch.go: choir.net.fetch, the way out of a container without network
	stopNetFetch, err := registerNetFetch(agentsMgr, func() *config.Config { return plane.Config().Config }, st, director, home, log.With(logs.KeySystem, "netfetch"))
	if err != nil {
		return err
	}
	defer stopNetFetch()
	plane.SetMemory(memTools)
	plane.Console.Workspace = agentsMgr.WorkspacePath
	plane.Console.IsConsoleDM = func(dm string) bool {
		c := plane.Config().Config
		return c.Gateways[c.DMs[dm].Gateway].Type == config.GatewayConsole
	}
	svc.status("starting the gateway")
	stopGateway, leadGateway, err := startGateway(ctx, plane, agentsMgr, st, builder, gate, log, o.replica)
	if err != nil {
		return fmt.Errorf("cannot start the gateway: %w", err)
	}
	defer stopGateway()
	stopMetrics, err := serveMetrics(plane, agentsMgr, st, log.With(logs.KeySystem, "metrics"))
	if err != nil {
		return fmt.Errorf("cannot start: %w", err)
	}
	defer stopMetrics()
	admin, err := rpc.ListenUnix(home.AdminSocket())
	if err != nil {
		plane.Step("accept choirctl and agent connections", ctl.StepFailed, err.Error())
		return err
	}
	clientCAs, err := mutualTLS(home, o, agentsMgr.Runtime, rpcServer) // runtime.go
	if err != nil {
		admin.Close()
		plane.Step("accept choirctl and agent connections", ctl.StepFailed, err.Error())
		return err
	}
	agents, endpoint, httpEndpoint, err := listenAgents(ctx, home, o, dc, clientCAs)
	if err != nil {
		admin.Close()
		plane.Step("accept choirctl and agent connections", ctl.StepFailed, err.Error())
		return err
	}
	if agentsMgr.Runtime != nil && httpEndpoint == nil {
		admin.Close() // no agent listener: the socket transport has none
		err := fmt.Errorf("runtime.kind is %q: agents on Swarm nodes reach choird only over HTTPS; start choird with --transport=http and a --listen address the nodes reach", config.RuntimeSwarm)
		plane.Step("accept choirctl and agent connections", ctl.StepFailed, err.Error())
		return err
	}
	agentsMgr.HTTP = httpEndpoint
	plane.SetEndpoint(o.transport, endpoint, "")
	plane.Step("accept choirctl and agent connections", ctl.StepOK, fmt.Sprintf("admin %s, agents %s %s", home.AdminSocket(), o.transport, endpoint))

	monitorCtx, stopMonitor := context.WithCancel(context.Background())
	defer stopMonitor()
	go agentsMgr.Monitor(monitorCtx)
	// Status, agent status and the gateway's /status say when Postgres or
	// the engine stops answering.
	go plane.WatchHealth(monitorCtx, control.DefaultHealthInterval, healthProbes(st, dc, agentsMgr)...)
	// Admin requests derive from serveCtx, so long streams (log follow)
	// end when the stop begins instead of holding it for the grace period;
	// rpcServer.Shutdown ends the agents' push streams likewise.
	serveCtx, endStreams := context.WithCancel(context.Background())
	defer endStreams()
	// The admin socket has its own connection budget, which no agent
	// listener draws on, and no write timeout: its follow, log and chat
	// streams are long-lived. The agent protocol server applies its limits
	// to every listener it serves.
	adminServer := &http.Server{Handler: countAdmin(plane.AdminHandler()), ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn),
		BaseContext: func(net.Listener) context.Context { return serveCtx }}
	adminLimits := rpc.AdminLimits()
	admin = adminLimits.Apply(adminServer, admin, adminLimits.MaxConnsShared)
	errc := make(chan error, 3)
	go func() {
		if err := adminServer.Serve(admin); !errors.Is(err, http.ErrServerClosed) {
			errc <- err
		}
	}()
	if agents != nil {
		go func() {
			if err := rpcServer.Serve(agents); !errors.Is(err, http.ErrServerClosed) {
				errc <- err
			}
		}()
	}
	ready := plane.Status()
	log.Info("choird ready", "config_version", ready.ConfigVersion, "config_hash", ready.ConfigHash, "resources", ready.Resources)
	svc.ready()
	svc.status("ready: config version %d, admin socket %s", ready.ConfigVersion, home.AdminSocket())
	// The sessions this start found interrupted: their DMs are told, and
	// the restart policy starts their agents again (resuming them).
	go agentsMgr.AfterStart(monitorCtx)
	sweepMemory(mem, plane)
	// The director loop of headless runs (headless_runs.go).
	headless := func() func() {
		stop, err := startHeadless(plane, st, director, gate, agentsMgr, dc, home, instanceID(home), log.With(logs.KeySystem, "headless"), kbEvidence(kbase))
		if err != nil {
			log.Error("headless runs not started", logs.KeyError, err.Error())
			return func() {}
		}
		return stop
	}
	stopHeadless, stopElection := func() {}, func() {}
	if o.replica { // replica.go: the pollers, senders and runs only while leading
		stopElection = startElection(st, log.With(logs.KeySystem, "leader"), func(ctx context.Context, term int64) {
			stop := headless()
			leadGateway(ctx)
			stop()
		}, errc)
	} else {
		stopHeadless = headless()
	}

	select {
	case <-ctx.Done():
		log.Info("choird stopping", "reason", "signal")
	case err = <-errc:
		log.Error("choird stopping: a listener failed", logs.KeyError, err.Error())
	}
	svc.stopping()
	svc.status("stopping: ending the agents' sessions")
	// Agents stop first, while they can still reach choird to say goodbye;
	// before them, the restart policy's pending restarts, so none starts
	// an agent again meanwhile.
	agentsMgr.StopRestarts()
	stopElection() // a leading replica stops its parts and frees the lock for the other
	stopHeadless() // runs in progress stop where they are; the next start settles them
	stopAgents(agentsMgr, log)
	stopMonitor()
	endStreams()
	sctx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
	defer cancel()
	if adminServer.Shutdown(sctx) != nil {
		adminServer.Close()
	}
	if err := rpcServer.Shutdown(sctx); err != nil {
		log.Warn("agent protocol server stopped uncleanly", logs.KeyError, err.Error())
	}
	log.Info("choird stopped")
	return err
}

// loadConfig runs startup steps 1 and 2.
func loadConfig(home config.Home, plane *control.Plane) error {
	// Step 1 reports config.json's own problems (its mode and owner, its
	// content, its workspaces against this host); Load repeats them with
	// secrets.json's and the cross-checks.
	data, err := config.ReadConfig(home)
	if err == nil {
		var c *config.Config
		if c, err = config.Parse(data); err == nil {
			err = config.CheckHost(c, home).Err()
		}
	}
	if err != nil {
		plane.Step("read and validate config.json", ctl.StepFailed, err.Error())
		return err
	}
	plane.Step("read and validate config.json", ctl.StepOK, home.ConfigPath())
	loaded, err := config.Load(home)
	if err != nil {
		plane.Step("read and validate secrets.json", ctl.StepFailed, err.Error())
		return err
	}
	plane.SetConfig(loaded)
	plane.Step("read and validate secrets.json", ctl.StepOK, fmt.Sprintf("%d secrets", len(loaded.Secrets)))
	return nil
}

// listenAgents opens the agents' shared endpoint for the HTTP transport
// (§12.1) and says how agents reach it; with UDS there is none (nil), only
// the per-agent sockets the lifecycle opens at each start.
//
// Agents run in containers on the engine's bridge network, so choird
// listens where they can reach it: by default on the bridge's gateway
// address, port 9400. It serves TLS with the certificate given, or with
// one it signs itself (agentTLS); each container trusts only that CA.
// With clientCAs it admits only clients with a certificate they signed.
func listenAgents(ctx context.Context, home config.Home, o options, dc *docker.Client, clientCAs *x509.CertPool) (net.Listener, string, *lifecycle.HTTPEndpoint, error) {
	if o.transport != rpc.TransportHTTP {
		return nil, filepath.Join(home.AgentSocketDir(), "<agent-id>", lifecycle.SocketName), nil, nil
	}
	listen := o.listen
	if listen == "" {
		listen = ":" + defaultAgentPort
	}
	host, port, err := net.SplitHostPort(listen)
	if err != nil {
		return nil, "", nil, fmt.Errorf("--listen %q: want HOST:PORT (%v)", o.listen, err)
	}
	agentHost := host
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		if agentHost, err = bridgeGateway(ctx, dc); err != nil {
			return nil, "", nil, err
		}
		if host == "" && o.listen == "" {
			listen = net.JoinHostPort(agentHost, port)
		}
	} else if ip != nil && ip.IsLoopback() || host == "localhost" {
		return nil, "", nil, fmt.Errorf("--listen %s: agents run in containers and cannot reach a loopback address; "+
			"leave --listen out (the engine's bridge gateway, port %s) or name an address the containers reach", listen, defaultAgentPort)
	}
	certFile, keyFile := o.tlsCert, o.tlsKey
	var ca []byte
	if certFile == "" {
		if certFile, keyFile, ca, err = agentTLS(home.Dir, agentHost); err != nil {
			return nil, "", nil, fmt.Errorf("the HTTP transport's certificate: %w", err)
		}
	} else {
		caFile := o.tlsCA
		if caFile == "" {
			caFile = certFile // a self-signed certificate is its own CA
		}
		if ca, err = os.ReadFile(caFile); err != nil {
			return nil, "", nil, fmt.Errorf("--tls-ca: %w", err)
		}
	}
	l, err := rpc.ListenTCP(listen, certFile, keyFile, clientCAs)
	if err != nil {
		return nil, "", nil, err
	}
	if _, p, err := net.SplitHostPort(l.Addr().String()); err == nil {
		port = p // the port the system chose for --listen HOST:0
	}
	url := "https://" + net.JoinHostPort(agentHost, port)
	return l, url, &lifecycle.HTTPEndpoint{URL: url, CA: ca}, nil
}

// defaultAgentPort is the HTTP transport's port (§12.2's example).
const defaultAgentPort = "9400"

// bridgeGateway is the host's address on the engine's default bridge
// network: where containers reach choird.
func bridgeGateway(ctx context.Context, dc *docker.Client) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	n, err := dc.NetworkInspect(ctx, "bridge")
	if err != nil {
		return "", fmt.Errorf("find the engine's bridge network, where agents reach choird: %w (or give --listen ADDRESS:PORT)", err)
	}
	return gatewayOf(n, func(name string) ([]net.Addr, error) {
		ifc, err := net.InterfaceByName(name)
		if err != nil {
			return nil, err
		}
		return ifc.Addrs()
	})
}

// bridgeNameOption names a bridge network's host interface.
const bridgeNameOption = "com.docker.network.bridge.name"

// gatewayOf is a bridge network's gateway: its IPAM gateway, else the
// IPv4 address of its host interface inside its subnet (engines leave the
// default bridge's gateway out of IPAM when dockerd was given --bip or
// nothing).
func gatewayOf(n docker.Network, addrs func(iface string) ([]net.Addr, error)) (string, error) {
	var subnets []*net.IPNet
	for _, c := range n.IPAM.Config {
		if ip := net.ParseIP(c.Gateway); ip != nil && ip.To4() != nil {
			return c.Gateway, nil
		}
		if _, sn, err := net.ParseCIDR(c.Subnet); err == nil {
			subnets = append(subnets, sn)
		}
	}
	if name := n.Options[bridgeNameOption]; name != "" {
		as, err := addrs(name)
		if err != nil {
			return "", fmt.Errorf("the engine's bridge %s: %w (or give --listen ADDRESS:PORT)", name, err)
		}
		for _, a := range as {
			ipn, ok := a.(*net.IPNet)
			if !ok || ipn.IP.To4() == nil {
				continue
			}
			for _, sn := range subnets {
				if sn.Contains(ipn.IP) {
					return ipn.IP.String(), nil
				}
			}
			if len(subnets) == 0 {
				return ipn.IP.String(), nil
			}
		}
	}
	return "", errors.New("the engine's bridge network has no IPv4 gateway on this host: give --listen ADDRESS:PORT, an address the containers reach")
}

// stopAgents stops every running agent gracefully when choird stops, all
// at once, so the stop takes as long as the slowest agent (at most
// agentStopTimeout for its summary, then its container's removal), not
// their sum: choird.service's TimeoutStopSec relies on that bound.
func stopAgents(m *lifecycle.Manager, log *slog.Logger) {
	var wg sync.WaitGroup
	for _, st := range m.List() {
		if st.State == "stopped" {
			continue
		}
		wg.Add(1)
		go func(id string) {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), agentStopTimeout)
			defer cancel()
			if err := m.Stop(ctx, id); err != nil {
				log.Warn("stop agent at shutdown", "agent_id", id, logs.KeyError, err.Error())
			}
		}(st.AgentID)
	}
	wg.Wait()
}

// agentBinary is the choir-agent that builds bake into base images: the
// flag's, else the one installed beside choird. A missing binary is
// reported by the build that needs it.
func agentBinary(flagValue string) string {
	if flagValue != "" {
		return flagValue
	}
	exe, err := os.Executable()
	if err != nil {
		return "choir-agent"
	}
	return filepath.Join(filepath.Dir(exe), "choir-agent")
}
