package build

import (
	"bytes"
	"regexp"
	"strings"
)

// BaseRepo is the repository of base images; BaseLatest always names the
// newest base built.
const (
	BaseRepo   = "choir-base"
	BaseLatest = BaseRepo + ":latest"
)

// fromBase matches a FROM line naming choir-base without a version (or as
// :latest), which the build pins to the exact base image it made.
var fromBase = regexp.MustCompile(`(?i)^(\s*FROM\s+(?:--platform=\S+\s+)?)choir-base(?::latest)?(\s+AS\s+\S+)?\s*$`)

// anyBase matches a FROM line naming any choir-base image.
var anyBase = regexp.MustCompile(`(?im)^\s*FROM\s+(?:--platform=\S+\s+)?choir-base(?::\S+)?(?:\s|$)`)

// usesBase reports whether a Dockerfile starts a stage from choir-base.
func usesBase(src []byte) bool { return anyBase.Match(src) }

// agentDockerfile is the Dockerfile sent to the engine for the agent image:
// the agent repo's Dockerfile with FROM choir-base[:latest] pinned to
// baseRef, followed by the instruction that bakes the merged tree into
// /choir. The agent's Dockerfile builds tools from source; it does not copy
// tools, skills or identity (design §6.5).
func agentDockerfile(src []byte, baseRef string) []byte {
	var b bytes.Buffer
	lines := strings.SplitAfter(string(src), "\n")
	for _, line := range lines {
		body := strings.TrimRight(line, "\r\n")
		if m := fromBase.FindStringSubmatch(body); m != nil {
			b.WriteString(m[1] + baseRef + m[2] + line[len(body):])
			continue
		}
		b.WriteString(line)
	}
	if b.Len() > 0 && !bytes.HasSuffix(b.Bytes(), []byte("\n")) {
		b.WriteByte('\n')
	}
	b.WriteString("\n# Added by choird: the merged tools, skills and identity (design §6.5, §15.1).\n")
	b.WriteString("COPY " + choirDir + "/ /choir/\n")
	return b.Bytes()
}

// withLabels appends one LABEL instruction setting labels (in key order):
// one step, where the engine's labels parameter would add one per label.
func withLabels(dockerfile []byte, labels map[string]string) []byte {
	var b bytes.Buffer
	b.Write(dockerfile)
	if b.Len() > 0 && !bytes.HasSuffix(dockerfile, []byte("\n")) {
		b.WriteByte('\n')
	}
	b.WriteString("LABEL")
	for _, k := range sortedKeys(labels) {
		b.WriteString(" " + quote(k) + "=" + quote(labels[k]))
	}
	b.WriteByte('\n')
	return b.Bytes()
}

// quote makes s one double-quoted Dockerfile word.
func quote(s string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", " ").Replace(s) + `"`
}
