package main

// choirctl memory list   --agent <id> [--store knowledge] [--limit N] [--json]
// choirctl memory search --agent <id> [--store knowledge|session] [--mode M] [--session S] [--limit N] [--json] [query]
// choirctl memory add    --agent <id> [--key K] [--metadata JSON] [--json] <text>
// choirctl memory delete --agent <id> (--key K | --id ID) [--json]
//
// The operator's path into an agent's long-term memory (spec 11.6). choird
// runs each through the same handlers as the agent's choir.memory.query
// and choir.memory.upsert, so what the operator sees is what the agent
// finds, provenance included; add and delete write the agent's own
// knowledge as that agent.

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"strings"
	"text/tabwriter"

	"choir/internal/rpc"
)

// memoryCommands are the subcommands of `choirctl memory`.
var memoryCommands = []command{
	{name: "list", args: "--agent <id> [--store knowledge] [--limit N] [--json]", summary: "an agent's knowledge documents, newest first", run: memoryList},
	{name: "search", args: "--agent <id> [--store knowledge|session] [--mode M] [--session S] [--json] [query]", summary: "search an agent's session memory or knowledge, with provenance", run: memorySearch},
	{name: "add", args: "--agent <id> [--key K] [--metadata JSON] [--json] <text>", summary: "add a knowledge document (replacing the one with the same key)", run: memoryAdd},
	{name: "delete", args: "--agent <id> (--key K | --id ID) [--json]", summary: "delete a knowledge document by key or id", run: memoryDelete},
}

// memoryFlags are the flags every memory subcommand takes.
type memoryFlags struct {
	agent  *string
	asJSON *bool
}

func newMemoryFlags(fs *flag.FlagSet) memoryFlags {
	return memoryFlags{
		agent:  fs.String("agent", "", "the agent whose memory to use (required)"),
		asJSON: fs.Bool("json", false, "print choird's answer as JSON"),
	}
}

func (m memoryFlags) check() error {
	if *m.agent == "" {
		return usagef("name the agent with --agent <id>")
	}
	return nil
}

func memoryList(ctx context.Context, e *env, args []string) error {
	fs := newFlags(e, "memory list", "memory list --agent <id> [--store knowledge] [--limit N] [--json]")
	mf := newMemoryFlags(fs)
	storeName := fs.String("store", "knowledge", "the store to list: knowledge (session memory is read with `memory search --mode session_detail`)")
	limit := fs.Int("limit", 20, "how many documents, 1 to 100")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if err := mf.check(); err != nil {
		return err
	}
	if fs.NArg() != 0 {
		return usagef("memory list takes no arguments (did you mean memory search?)")
	}
	if *storeName != "knowledge" {
		return usagef("--store %q: list shows the knowledge store; read session memory with `choirctl memory search --agent %s --store session --mode session_detail --session <id>`", *storeName, *mf.agent)
	}
	c := e.client()
	defer c.Close()
	ans, err := c.MemoryKnowledge(ctx, *mf.agent, *limit)
	if err != nil {
		return err
	}
	return printMemory(e, ans, *mf.asJSON)
}

func memorySearch(ctx context.Context, e *env, args []string) error {
	fs := newFlags(e, "memory search", "memory search --agent <id> [--store knowledge|session] [--mode M] [--session S] [--json] [query]")
	mf := newMemoryFlags(fs)
	storeName := fs.String("store", "knowledge", "knowledge or session")
	mode := fs.String("mode", "", "semantic, text, hybrid (the default) or session_detail")
	session := fs.String("session", "", "the session to read (mode session_detail)")
	limit := fs.Int("limit", 0, "how many hits, 1 to 20 (default 10)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if err := mf.check(); err != nil {
		return err
	}
	q := rpc.MemoryQuery{Store: *storeName, Mode: *mode, Query: strings.Join(fs.Args(), " "), Limit: *limit, SessionID: *session}
	if q.Query == "" && q.SessionID == "" {
		return usagef("give a query (or --session with --mode session_detail)")
	}
	c := e.client()
	defer c.Close()
	ans, err := c.MemorySearch(ctx, *mf.agent, q)
	if err != nil {
		return err
	}
	return printMemory(e, ans, *mf.asJSON)
}

func memoryAdd(ctx context.Context, e *env, args []string) error {
	fs := newFlags(e, "memory add", "memory add --agent <id> [--key K] [--metadata JSON] [--json] <text>")
	mf := newMemoryFlags(fs)
	key := fs.String("key", "", "a stable name; a document with this key is replaced")
	meta := fs.String("metadata", "", `tags as a JSON object, e.g. {"topic":"travel"}`)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if err := mf.check(); err != nil {
		return err
	}
	text := strings.Join(fs.Args(), " ")
	if strings.TrimSpace(text) == "" {
		return usagef("give the document's text")
	}
	u := rpc.MemoryUpsert{Op: "insert", Key: *key, Text: text}
	if *meta != "" {
		if !json.Valid([]byte(*meta)) || !strings.HasPrefix(strings.TrimSpace(*meta), "{") {
			return usagef("--metadata %q: want a JSON object", *meta)
		}
		u.Metadata = json.RawMessage(*meta)
	}
	c := e.client()
	defer c.Close()
	ans, err := c.MemoryUpsert(ctx, *mf.agent, u)
	if err != nil {
		return err
	}
	return printMemory(e, ans, *mf.asJSON)
}

func memoryDelete(ctx context.Context, e *env, args []string) error {
	fs := newFlags(e, "memory delete", "memory delete --agent <id> (--key K | --id ID) [--json]")
	mf := newMemoryFlags(fs)
	key := fs.String("key", "", "the document's key")
	id := fs.String("id", "", "the document's id (from memory list or search)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if err := mf.check(); err != nil {
		return err
	}
	if fs.NArg() != 0 || (*key == "") == (*id == "") {
		return usagef("name the document with --key or --id (one of them)")
	}
	c := e.client()
	defer c.Close()
	ans, err := c.MemoryUpsert(ctx, *mf.agent, rpc.MemoryUpsert{Op: "delete", Key: *key, ID: *id})
	if err != nil {
		return err
	}
	return printMemory(e, ans, *mf.asJSON)
}

// printMemory prints choird's answer: its summary and a line per hit with
// where it came from.
func printMemory(e *env, ans *rpc.MemoryAnswer, asJSON bool) error {
	if asJSON {
		return printJSON(e, ans)
	}
	fmt.Fprintln(e.stdout, ans.Summary)
	if len(ans.Hits) == 0 {
		return nil
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SCORE\tDOCUMENT\tFROM\tTEXT")
	for _, h := range ans.Hits {
		from := "key " + dash(h.Key)
		if h.Store == "session" {
			from = fmt.Sprintf("%s %s #%d revs %v", h.SessionID, h.Tier, h.ChunkIndex, h.Revisions)
		}
		text := strings.Join(strings.Fields(h.Text), " ")
		if len(text) > 80 {
			text = strings.ToValidUTF8(text[:80], "") + "…"
		}
		fmt.Fprintf(tw, "%.3f\t%s\t%s\t%s\n", h.Score, h.DocumentID, from, text)
	}
	return tw.Flush()
}
