// Package build makes agent images (design §6.5, §17.3): choirctl agent
// build. It never starts or stops an agent.
//
// Builder.Build runs these steps, one build at a time:
//
//  1. Fetch the global repo and the agent's repo (choird/repo). A fetch
//     that fails with a clone present is a warning; the stale clone is used.
//  2. Export both commits and check them before the engine sees anything:
//     the global repo has Dockerfile.base and identity/USER.md, the agent
//     repo a Dockerfile and no .choir/; every tools/<name>.json is a JSON
//     object with llm.name = <name>, an llm.input_schema that compiles
//     (internal/jsonschema) and a runtime object, beside an executable
//     tools/<name>, a source directory tools/<name>/ (which the repo's
//     Dockerfile compiles into /choir/tools/<global|agent>/<name>) or an
//     absolute runtime.exec_path; no tool takes a built-in's name; every
//     skills/<name>.json parses, is named <name> and validates against the
//     merged tools and the built-ins (agent/skill). Every fault is listed at
//     once in an *InvalidError, naming the repo and file.
//  3. Merge (Tree): agent tools and skills replace global ones of the same
//     name; global tools not replaced go to /choir/tools/global/, agent
//     tools to /choir/tools/agent/, skills to /choir/skills/; USER.md comes
//     from the global repo only; SOUL.md and SOUL-CORE.md from the agent
//     repo when it has them, else the global repo, else empty (a warning).
//  4. Name the images. The base image is choir-base:<global short
//     commit>-<first 12 hex of the choir-agent binary's SHA-256>. The agent
//     image is choir-agent-<id>:<image_version>, where image_version is the
//     first 12 hex of a SHA-256 over both commits, both manifest hashes, the
//     binary's hash and the generated Dockerfile. The manifest hashes are
//     SHA-256 over each manifest's canonical JSON in name order, each
//     followed by a newline; for tools this equals choir-agent's
//     Registry.ManifestHash and internal/manifest.Dirs. An existing agent
//     image of that name is used as it is (same inputs, same image) when
//     Records holds it with the same image id; otherwise it is built again.
//     Every result is recorded in Records, which INIT_HELLO is checked
//     against.
//  5. Build the base image if its tag is missing, from the global repo
//     (Dockerfile.base, with one LABEL line appended) plus the binary as
//     choir-agent at the context root; tag it choir-base:latest too.
//  6. Build the agent image from the agent repo plus .choir/ (the merged
//     tree and version.json), with the agent's Dockerfile rewritten: a
//     FROM choir-base or choir-base:latest is pinned to the exact base tag,
//     and COPY .choir/ /choir/ and one LABEL line (choir.managed,
//     choir.agent, choir.image_version, both commits, the base) are
//     appended.
//
// The last successful build, whether it built the image or reused it, tags
// it choir-agent-<id>:latest: that is the image the lifecycle starts.
//
// Progress lines are meant for people: what is fetched and at which commit,
// whether the base was cached, each step of the engine's output and what it
// printed. A failing step is a *StepError with the step, the engine's
// message and the step's output; an engine that does not answer is an error
// naming its address. A failed build leaves earlier images and clones as
// they were (images are tagged only when their build succeeds).
//
// DockerfileBase is the reference Dockerfile.base, also at the top of the
// source tree. Its apt-get step is skipped when the packages are already in
// the image, which lets it build offline from the Debian image
// testkit/imagetest makes.
package build
