package main

import (
	"bytes"
	"strings"
	"testing"
)

func TestHelpOnStdout(t *testing.T) {
	for _, h := range []string{"-h", "--help", "-help"} {
		var out, errb bytes.Buffer
		code := realMain([]string{h}, &out, &errb)
		if code != 0 || errb.Len() != 0 || !strings.HasPrefix(out.String(), "usage: choird") || !strings.Contains(out.String(), "-transport") {
			t.Errorf("choird %s = exit %d, stdout %q, stderr %q; want the usage and flags on stdout, exit 0", h, code, out.String(), errb.String())
		}
	}
}

func TestWrongFlagUsageOnStderr(t *testing.T) {
	for _, args := range [][]string{{"--bogus"}, {"extra"}, {"--home"}} {
		var out, errb bytes.Buffer
		code := realMain(args, &out, &errb)
		if code != 2 || out.Len() != 0 || !strings.Contains(errb.String(), "usage: choird") {
			t.Errorf("choird %q = exit %d, stdout %q, stderr %q; want exit 2 with the usage on stderr", args, code, out.String(), errb.String())
		}
	}
}
