// Package tool is choir-agent's tool system (design §8): the Tool interface
// that built-in and external tools share, the structured results a model
// receives, external tool manifests and their runner, host tools, and the
// immutable Registry built at startup.
//
// # Two views
//
// Every tool has an LLM view (LLMTool: name, description, parameters schema),
// the only part a model API sees, and a runtime view (Runtime: timeout, locks,
// network, secret_resources, side_effect, idempotent, version, exposure,
// prompt_mask, host). Registry.LLMTools returns LLM views only. Names are
// canonical and namespaced (choir.fs.read); WireName gives the form model
// APIs accept (choir_fs_read), and the registry refuses two tools whose wire
// names collide, so Registry.LookupWire maps a model's tool call back.
//
// Exposure says which lanes a tool is offered to, and so whose context its
// output can enter: edge, core, both (the default) or none (never offered to
// a model; the runtime may still call it). prompt_mask asks the lane to keep
// the full output out of later prompts, showing summary and artifact_ref.
//
// # Loading (§8.8)
//
// Load takes the built-ins (agent/tool/workspace, host tools), then scans
// /choir/tools/global and /choir/tools/agent for <name>.json manifests beside
// an executable <name>. Manifests are parsed strictly (see Manifest for the
// format and defaults); every fault in every file is reported at once, each
// naming its file and JSON pointer, and any fault fails startup. An agent tool
// replaces a global tool of the same name; nothing replaces a built-in.
// Registry.ManifestHash is version.json's tool_manifest_hash.
//
// # Calls (§8.9)
//
// The arbiter calls Registry.Prepare (find the tool, validate the input
// against its compiled schema, compute its locks), acquires Call.Locks, runs
// Call.Run and releases the locks. Run applies the tool's timeout, hands the
// tool only the secrets its secret_resources name, and turns every failure —
// an *Error, a timeout, a cancellation, a panic — into a Result with status
// "error" and {code, message, path?, failures?}, so the model always gets
// structured JSON back and the agent never crashes on a tool.
//
// Locks are expressed as LockReq{Key, Mode} in agent/lock's key syntax; the
// arbiter translates them. External tools run as described on External;
// host tools (HostTool) delegate to choird through an injected HostFunc.
package tool
