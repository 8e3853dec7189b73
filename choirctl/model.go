package main

// choirctl model list
// choirctl model get <agent-id>
// choirctl model set <agent-id> --llm=<name>
// choirctl voice list
// choirctl voice get <agent-id>
// choirctl voice set <agent-id> <name>
//
// Model and voice changes take effect at the agent's next LLM call or TTS
// call and last until it restarts (§17.1).

import (
	"context"
	"fmt"
	"text/tabwriter"

	"choir/internal/ctl"
)

// modelCommands are the subcommands of `choirctl model`.
var modelCommands = []command{
	{name: "list", summary: "the configured models and TTS providers", run: func(ctx context.Context, e *env, args []string) error { return catalog(ctx, e, args, false) }},
	{name: "get", args: "<agent-id>", summary: "the model an agent uses now", run: func(ctx context.Context, e *env, args []string) error { return modelGet(ctx, e, args, false) }},
	{name: "set", args: "<agent-id> --llm=<name>", summary: "switch an agent's model until it restarts", run: modelSet},
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
	if voice {
		fmt.Fprintf(e.stdout, "%s\n", dash(m.VoiceProfile))
	} else {
		fmt.Fprintf(e.stdout, "%s\n", m.LLM)
	}
	return nil
}

func modelSet(ctx context.Context, e *env, args []string) error {
	fs := newFlags(e, "model set", "model set <agent-id> --llm=<name>")
	llm := fs.String("llm", "", "the named model to use until the agent restarts")
	id, err := oneArg(fs, args, "agent id")
	if err != nil {
		return err
	}
	if *llm == "" {
		return usagef("--llm is required")
	}
	return setModel(ctx, e, id, ctl.ModelChoice{LLM: *llm})
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
	fmt.Fprintf(e.stdout, "%s now uses model %s and voice %s (until it restarts)\n", agentID, m.LLM, dash(m.VoiceProfile))
	return nil
}
