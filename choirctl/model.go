package main

// choirctl model list
// choirctl model get <agent-id>
// choirctl model set <agent-id> [--llm=<name>] [--core-llm=<name>] [--summary-llm=<name>]
// choirctl voice list
// choirctl voice get <agent-id>
// choirctl voice set <agent-id> <name>
//
// Model and voice changes take effect at the agent's next LLM call or TTS
// call and last until it restarts (§17.1). An agent has three model roles:
// llm (the edge), core_llm (core jobs) and summary_llm (the session summary
// and compaction); a role without a model of its own uses llm's.

import (
	"context"
	"fmt"
	"text/tabwriter"

	"choir/internal/ctl"
)

// modelCommands are the subcommands of `choirctl model`.
var modelCommands = []command{
	{name: "list", summary: "the configured models and TTS providers", run: func(ctx context.Context, e *env, args []string) error { return catalog(ctx, e, args, false) }},
	{name: "get", args: "<agent-id> [--json]", summary: "the models an agent uses now, per role", run: func(ctx context.Context, e *env, args []string) error { return modelGet(ctx, e, args, false) }},
	{name: "set", args: "<agent-id> [--llm=<name>] [--core-llm=<name>] [--summary-llm=<name>]", summary: "switch an agent's model of a role until it restarts", run: modelSet},
}

// voiceCommands are the subcommands of `choirctl voice`.
var voiceCommands = []command{
	{name: "list", summary: "the configured voice profiles", run: func(ctx context.Context, e *env, args []string) error { return catalog(ctx, e, args, true) }},
	{name: "get", args: "<agent-id>", summary: "the voice profile an agent uses now", run: func(ctx context.Context, e *env, args []string) error { return modelGet(ctx, e, args, true) }},
	{name: "set", args: "<agent-id> <name>", summary: "switch an agent's voice profile until it restarts", run: voiceSet},
}

func catalog(ctx context.Context, e *env, args []string, voices bool) error {
	group := "model"
	if voices {
		group = "voice"
	}
	fs := newFlags(e, group+" list", group+" list")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	c := e.client()
	defer c.Close()
	cat, err := c.Models(ctx)
	if err != nil {
		return err
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	if voices {
		fmt.Fprintln(tw, "VOICE PROFILE\tTTS\tVOICE ID")
		for _, v := range cat.VoiceProfiles {
			fmt.Fprintf(tw, "%s\t%s\t%s\n", v.Name, v.Provider, v.Model)
		}
		return tw.Flush()
	}
	fmt.Fprintln(tw, "MODEL\tPROVIDER\tID\tENDPOINT")
	for _, m := range cat.Models {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", m.Name, m.Provider, m.Model, m.Endpoint)
	}
	for _, t := range cat.TTS {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", t.Name+" (tts)", t.Provider, t.Model, t.Endpoint)
	}
	return tw.Flush()
}

func modelGet(ctx context.Context, e *env, args []string, voice bool) error {
	group := "model"
	if voice {
		group = "voice"
	}
	fs := newFlags(e, group+" get", group+" get <agent-id>")
	asJSON := fs.Bool("json", false, "print the choice as JSON")
	id, err := oneArg(fs, args, "agent id")
	if err != nil {
		return err
	}
	c := e.client()
	defer c.Close()
	m, err := c.Model(ctx, id)
	if err != nil {
		return err
	}
	switch {
	case *asJSON:
		return printJSON(e, m)
	case voice:
		fmt.Fprintf(e.stdout, "%s\n", dash(m.VoiceProfile))
	default:
		// The edge's model, then each role that has a model of its own.
		fmt.Fprintf(e.stdout, "%s\n", m.LLM)
		if m.CoreLLM != "" {
			fmt.Fprintf(e.stdout, "core_llm: %s\n", m.CoreLLM)
		}
		if m.SummaryLLM != "" {
			fmt.Fprintf(e.stdout, "summary_llm: %s\n", m.SummaryLLM)
		}
	}
	return nil
}

// roleModel names a role's model, or says it is the edge's.
func roleModel(name, llm string) string {
	if name == "" {
		return llm + " (the llm's)"
	}
	return name
}

func modelSet(ctx context.Context, e *env, args []string) error {
	fs := newFlags(e, "model set", "model set <agent-id> [--llm=<name>] [--core-llm=<name>] [--summary-llm=<name>]")
	var choice ctl.ModelChoice
	fs.StringVar(&choice.LLM, "llm", "", "the edge's model until the agent restarts")
	fs.StringVar(&choice.CoreLLM, "core-llm", "", "the core jobs' model until the agent restarts")
	fs.StringVar(&choice.SummaryLLM, "summary-llm", "", "the session summary's and compaction's model until the agent restarts")
	id, err := oneArg(fs, args, "agent id")
	if err != nil {
		return err
	}
	if choice.LLM == "" && choice.CoreLLM == "" && choice.SummaryLLM == "" {
		return usagef("name a model for at least one role: --llm, --core-llm or --summary-llm")
	}
	return setModel(ctx, e, id, choice)
}

func voiceSet(ctx context.Context, e *env, args []string) error {
	fs := newFlags(e, "voice set", "voice set <agent-id> <name>")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 2 {
		return usagef("want an agent id and a voice profile name")
	}
	return setModel(ctx, e, fs.Arg(0), ctl.ModelChoice{VoiceProfile: fs.Arg(1)})
}

func setModel(ctx context.Context, e *env, agentID string, choice ctl.ModelChoice) error {
	c := e.client()
	defer c.Close()
	m, err := c.SetModel(ctx, agentID, choice)
	if err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "%s now uses model %s (core jobs %s, summary %s) and voice %s (until it restarts)\n",
		agentID, m.LLM, roleModel(m.CoreLLM, m.LLM), roleModel(m.SummaryLLM, m.LLM), dash(m.VoiceProfile))
	return nil
}
