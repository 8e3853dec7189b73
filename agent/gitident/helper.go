package gitident

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"choir/internal/gitcred"
)

// Main is choir-agent run as git-cred-helper, with the arguments after
// argv[0]: git's credential operations (get, store, erase), or "ssh" and
// git's ssh arguments (core.sshCommand). dir is Dir outside tests. It
// returns the exit status; "ssh" executes ssh and returns only on failure.
func Main(dir string, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprintln(stderr, "usage: git-cred-helper get|store|erase (git's credential helper), or git-cred-helper ssh ARGS (git's core.sshCommand)")
		return 2
	}
	switch args[0] {
	case "get":
		return helperGet(dir, stdin, stdout, stderr)
	case "store", "erase":
		// The identity's credential lives in choir-agent's memory only:
		// nothing to store, nothing to erase.
		io.Copy(io.Discard, io.LimitReader(stdin, gitcred.MaxRequest))
		return 0
	case "ssh":
		if err := sshPrepare(dir, args[1:], stderr); err != nil {
			fmt.Fprintf(stderr, "git-cred-helper: %v\n", err)
			return 255
		}
		ssh, err := exec.LookPath("ssh")
		if err != nil {
			fmt.Fprintf(stderr, "git-cred-helper: %v (is openssh-client installed in the image?)\n", err)
			return 255
		}
		argv := append([]string{"ssh", "-F", filepath.Join(dir, sshConfig)}, args[1:]...)
		err = syscall.Exec(ssh, argv, os.Environ())
		fmt.Fprintf(stderr, "git-cred-helper: run ssh: %v\n", err)
		return 255
	}
	// Unknown operations are ignored, as gitcredentials(7) asks.
	return 0
}

// helperGet forwards git's request to choir-agent and its answer to git.
// A refusal is told on stderr and answered with quit=1, so git fails at
// once instead of prompting for a password.
func helperGet(dir string, stdin io.Reader, stdout, stderr io.Writer) int {
	req, err := gitcred.Read(stdin)
	if err != nil {
		fmt.Fprintf(stderr, "git-cred-helper: %v\n", err)
		fmt.Fprint(stdout, "quit=1\n\n")
		return 1
	}
	answer, err := ask(dir, verbGet, req)
	if err != nil {
		fmt.Fprintf(stderr, "git-cred-helper: %v\n", err)
		fmt.Fprint(stdout, "quit=1\n\n")
		return 0
	}
	io.WriteString(stdout, answer)
	return 0
}

// sshPrepare asks choir-agent to get the ssh-agent ready for the host of
// git's ssh arguments. A refusal is not an error: ssh runs without the
// key, and stderr says why.
func sshPrepare(dir string, args []string, stderr io.Writer) error {
	host, port, err := sshDestination(args)
	if err != nil {
		return err
	}
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	if _, err := ask(dir, verbSSH, gitcred.Request{Protocol: "ssh", Host: host + ":" + port}); err != nil {
		fmt.Fprintf(stderr, "git-cred-helper: %v\n", err)
	}
	return nil
}

// sshDestination finds the host and port in the arguments git gives an
// OpenSSH-like command: [-o OPT]... [-p PORT] [-4|-6] [USER@]HOST COMMAND.
func sshDestination(args []string) (host, port string, err error) {
	port = "22"
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "-p" && i+1 < len(args):
			port = args[i+1]
			i++
		case strings.HasPrefix(a, "-p") && len(a) > 2:
			port = a[2:]
		case (a == "-o" || a == "-l" || a == "-i" || a == "-F") && i+1 < len(args):
			i++
		case strings.HasPrefix(a, "-"):
		default:
			if at := strings.LastIndex(a, "@"); at >= 0 {
				a = a[at+1:]
			}
			return strings.Trim(a, "[]"), port, nil
		}
	}
	return "", "", fmt.Errorf("no destination host in the ssh arguments %q", args)
}

// ask sends one request to choir-agent and returns what follows "ok", or
// the refusal as an error.
func ask(dir, verb string, req gitcred.Request) (string, error) {
	sock := filepath.Join(dir, socketName)
	conn, err := net.DialTimeout("unix", sock, 5*time.Second)
	if err != nil {
		return "", fmt.Errorf("cannot reach choir-agent at %s (%v): git credentials come from the running agent only", sock, err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(requestTimeout + 5*time.Second))
	if _, err := io.WriteString(conn, verb+"\n"); err != nil {
		return "", err
	}
	if err := req.Write(conn); err != nil {
		return "", err
	}
	br := bufio.NewReader(io.LimitReader(conn, gitcred.MaxRequest))
	status, err := br.ReadString('\n')
	if err != nil {
		return "", fmt.Errorf("choir-agent did not answer: %v", err)
	}
	if reason, ok := strings.CutPrefix(status, "refused "); ok {
		return "", fmt.Errorf("refused: %s", strings.TrimSpace(reason))
	}
	if status != "ok\n" {
		return "", fmt.Errorf("choir-agent answered %q", strings.TrimSpace(status))
	}
	rest, err := io.ReadAll(br)
	return string(rest), err
}
