package main

// choirctl agent start <agent-id> --dm=<name> [--fresh] [--workspace= --llm= --core-llm= --summary-llm= --voice-profile= --git-identity= --notion= --email=]
//
// Starts the agent's container and returns once the agent has said hello.
// The agent's last session resumes where choird last saved it (§13.2),
// unless --fresh asks for a new one.
// Every exclusive resource is leased at once or not at all; a refusal names
// the resource and the agent holding it. --dm is required here (choirctl has
// no DM of its own); the other flags override the agent's defaults.

import (
	"context"
	"fmt"

	"choir/internal/ctl"
)

func agentStart(ctx context.Context, e *env, args []string) error {
	fs := newFlags(e, "agent start", "agent start <agent-id> --dm=<name> [--fresh] [--workspace= --llm= --core-llm= --summary-llm= --voice-profile= --git-identity= --notion= --email=]")
	var req ctl.StartRequest
	fs.BoolVar(&req.Fresh, "fresh", false, "start a new session instead of resuming the agent's last one")
	fs.StringVar(&req.DM, "dm", "", "the DM to bind (required)")
	fs.StringVar(&req.Workspace, "workspace", "", "override the default workspace")
	fs.StringVar(&req.LLM, "llm", "", "override the default model")
	fs.StringVar(&req.CoreLLM, "core-llm", "", "override the core jobs' model (defaults.core_llm)")
	fs.StringVar(&req.SummaryLLM, "summary-llm", "", "override the session summary's and compaction's model (defaults.summary_llm)")
	fs.StringVar(&req.VoiceProfile, "voice-profile", "", "override the default voice profile")
	fs.StringVar(&req.GitIdentity, "git-identity", "", "override the default git identity")
	fs.StringVar(&req.Notion, "notion", "", "override the default Notion integration")
	fs.StringVar(&req.Email, "email", "", "override the default email account")
	asJSON := fs.Bool("json", false, "print the status as JSON")
	arg, err := oneArg(fs, args, "agent id")
	if err != nil {
		return err
	}
	if req.DM == "" {
		return usagef("--dm is required: name the DM (from config.json dms) the agent talks to")
	}
	c := e.client()
	defer c.Close()
	st, err := c.StartAgent(ctx, arg, req)
	if err != nil {
		return err
	}
	if *asJSON {
		return printJSON(e, st)
	}
	fmt.Fprintf(e.stdout, "%s started: session %s, container %s, image %s\n", st.AgentID, st.SessionID, st.Container, st.Image)
	if r := st.Resumed; r != nil {
		fmt.Fprintf(e.stdout, "resumed the session (it %s) at event %d; resumed %d time(s) so far; --fresh starts a new one\n", r.From, r.Rev, r.Resumes)
	}
	return nil
}

func agentStop(ctx context.Context, e *env, args []string) error {
	fs := newFlags(e, "agent stop", "agent stop <agent-id>")
	arg, err := oneArg(fs, args, "agent id")
	if err != nil {
		return err
	}
	c := e.client()
	defer c.Close()
	if err := c.StopAgent(ctx, arg); err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "%s stopped\n", arg)
	return nil
}

func agentRestart(ctx context.Context, e *env, args []string) error {
	fs := newFlags(e, "agent restart", "agent restart <agent-id>")
	arg, err := oneArg(fs, args, "agent id")
	if err != nil {
		return err
	}
	c := e.client()
	defer c.Close()
	st, err := c.RestartAgent(ctx, arg)
	if err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "%s restarted: session %s, container %s\n", st.AgentID, st.SessionID, st.Container)
	return nil
}
