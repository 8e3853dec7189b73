package main

import (
	"log/slog"
	"syscall"

	"choir/internal/rpc"
)

// agentLimits are the agent protocol server's limits for the configured
// agents (rpc.Limits.ForAgents: the shared listener and the server-wide
// connection caps grow with them, the per-agent ones do not), once the
// soft file descriptor limit is raised to the hard one. Go's runtime
// already does that at start on Linux; this says so in the log, and warns
// when even the hard limit cannot hold the agents: each holds about five
// descriptors in choird (two connections, the engine's wait and log
// stream, its log file).
func agentLimits(agents int, log *slog.Logger) rpc.Limits {
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err == nil && rl.Cur < rl.Max {
		want := rl
		want.Cur = rl.Max
		if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &want); err != nil {
			log.Warn("cannot raise the file descriptor limit to its hard limit", "soft", rl.Cur, "hard", rl.Max, "error", err.Error())
		} else {
			rl = want
		}
	}
	l := rpc.DefaultLimits().ForAgents(agents)
	if need := uint64(agents)*filesPerAgent + 1024; rl.Cur < need {
		log.Warn("the file descriptor limit is too low for the configured agents: raise it (LimitNOFILE= in choird's systemd unit, or ulimit -n)",
			"limit", rl.Cur, "agents", agents, "want_at_least", need)
	}
	log.Info("agent connection limits", "agents", agents, "shared_listener", l.MaxConnsShared, "total", l.MaxConnsTotal, "per_agent", l.MaxConnsPerAgent, "file_limit", rl.Cur)
	return l
}

// filesPerAgent is about how many descriptors choird holds per running
// agent.
const filesPerAgent = 5
