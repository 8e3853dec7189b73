package workspace

import (
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"choir/agent/tool"
	"choir/agent/tool/internal/proc"

	"choir/testkit"
)

func TestExec(t *testing.T) {
	var hundred string // what the capped command prints
	for i := 1; i <= 100; i++ {
		hundred += "line" + strconv.Itoa(i) + "\n"
	}
	ws := t.TempDir()
	mkfile(t, ws, "hello.txt", "hi\n")
	reg := registry(t, Options{ExecOutputCap: 100, ExecEnv: []string{"PATH=/usr/bin:/bin", "CHOIR_VISIBLE=yes"}})
	tests := []struct {
		name, command string
		exit          float64
		stdout        string
		stderr        string
		stdoutTrunc   bool
	}{
		{name: "success", command: "cat hello.txt", stdout: "hi\n"},
		{name: "exit code", command: "exit 7", exit: 7},
		{name: "stdout and stderr apart", command: "echo out; echo err >&2; exit 1", exit: 1, stdout: "out\n", stderr: "err\n"},
		{name: "runs in the workspace", command: "pwd", stdout: ws + "\n"},
		{name: "environment from options", command: "echo $CHOIR_VISIBLE", stdout: "yes\n"},
		{name: "bash, not sh", command: "[[ 1 == 1 ]] && echo bash", stdout: "bash\n"},
		{
			name:        "output past the cap keeps start and end",
			command:     "for i in $(seq 1 100); do echo line$i; done",
			stdout:      hundred[:50] + proc.Marker(int64(len(hundred)-100)) + hundred[len(hundred)-50:],
			stdoutTrunc: true,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := call(t, reg, ws, "choir.exec", `{"command": `+quote(tc.command)+`}`)
			if m["status"] != "success" || m["exit_code"] != tc.exit {
				t.Fatalf("choir.exec %q = %v; want success with exit_code %v", tc.command, m, tc.exit)
			}
			if m["stdout"] != tc.stdout || m["stderr"] != tc.stderr {
				t.Errorf("choir.exec %q: stdout %q, stderr %q; want %q, %q", tc.command, m["stdout"], m["stderr"], tc.stdout, tc.stderr)
			}
			if m["stdout_truncated"] != tc.stdoutTrunc {
				t.Errorf("stdout_truncated = %v; want %v", m["stdout_truncated"], tc.stdoutTrunc)
			}
		})
	}
}

func TestExecTimeoutKillsGroup(t *testing.T) {
	ws := t.TempDir()
	reg := registry(t, Options{})
	m := call(t, reg, ws, "choir.exec",
		`{"command": "echo started; sleep 1000 & echo $! > child.pid; echo $$ > shell.pid; wait", "timeout_ms": 1000}`)
	if errCode(m) != tool.CodeTimeout {
		t.Fatalf("choir.exec = %v; want a timeout", m)
	}
	if !strings.Contains(m["stdout"].(string), "started") {
		t.Errorf("timeout result stdout = %q; want the output so far", m["stdout"])
	}
	testkit.ProcessGone(t, testkit.ReadPid(t, filepath.Join(ws, "shell.pid")))
	testkit.ProcessGone(t, testkit.ReadPid(t, filepath.Join(ws, "child.pid")))
}

func TestExecKillsLeftoverChildren(t *testing.T) {
	ws := t.TempDir()
	reg := registry(t, Options{})
	// The command returns at once but leaves a background child holding
	// stdout: the call must still end, and the child must not outlive it.
	m := call(t, reg, ws, "choir.exec", `{"command": "sleep 1000 & echo $! > child.pid; echo done"}`)
	if m["status"] != "success" || m["exit_code"] != 0.0 || m["stdout"] != "done\n" {
		t.Fatalf("choir.exec = %v", m)
	}
	testkit.ProcessGone(t, testkit.ReadPid(t, filepath.Join(ws, "child.pid")))
}

func quote(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch r {
		case '"', '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case '\n':
			b.WriteString(`\n`)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}
