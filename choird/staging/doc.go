// Package staging is the first phase of a configuration change (design
// §16.3, §17.6, §17.7): `config load` reads all of .choir.d/ as one
// snapshot (config.json, secrets.json, and the global and per-agent repos
// fetched and checked as a build would check them) and stages it, or
// stages nothing; `config diff` compares the staged snapshot with the
// running one, change by change, each classified and with the command
// that applies it; `config apply` publishes the staged config.json and
// secrets.json when nothing in them needs a restart now.
//
// A change is one of three classes:
//
//   - hot-reload: what running agents and choird read at each use (models,
//     TTS providers, voice profiles, search providers, the settings of a
//     leased identity, Notion integration or email account, secrets, and
//     the tunables read per call). `config apply` publishes it; agents
//     fetch it with FETCH_DYNAMIC_CONFIG and swap it whole.
//   - next-start: what takes effect when an agent next starts or is next
//     built (an agent's defaults and repo, a workspace no running agent
//     holds, container limits, the heartbeat interval). `config apply`
//     publishes it; nothing running changes.
//   - restart-required: what choird reads once at its start (gateways and
//     DMs, Postgres, the embedding model, the approval timeout), and the
//     repos' content (tools, skills, identity files, Dockerfiles), which
//     lives in the images. `config apply` never publishes these: a
//     config.json change of this class (or a next-start change that would
//     pull something from under a running agent, like a leased workspace's
//     path) makes apply refuse the whole snapshot, saying what to run; repo
//     changes are applied by `agent build`, `agent update` and
//     `agent update-all`.
//
// Apply is all or nothing: the staged config.json and secrets.json become
// the running ones together, or nothing changes.
package staging
