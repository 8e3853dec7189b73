package doctor

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"choir/choird/lifecycle"
	"choir/internal/config"
	"choir/internal/logs"
	"choir/internal/rpc"
)

// checkConfig runs the checks of `choird --check` on config.json and
// secrets.json.
func (d *Doctor) checkConfig(ctx context.Context) Result {
	l, err := config.Load(d.Home)
	if err != nil {
		var ps config.Problems
		if errors.As(err, &ps) {
			lines := make([]string, len(ps))
			for i, p := range ps {
				lines[i] = p.String()
			}
			if l := d.usableConfig(); l != nil {
				d.set(ctx, func() { d.loaded = l })
			}
			return bad(Fail, fmt.Sprintf("fix each problem (`choird --check --home %s` lists them one a line)", d.Home.Dir),
				"%d problem(s) in %s: %s", len(ps), d.Home.Dir, strings.Join(lines, "; "))
		}
		return bad(Fail, "run `choirctl init` to create the home, or pass --home", "%v", err)
	}
	d.set(ctx, func() { d.loaded = l })
	return ok("%s and %s are valid (config %s, %d agents)", d.Home.ConfigPath(), d.Home.SecretsPath(), l.Version, len(l.Config.Agents))
}

// usableConfig is the configuration when what is wrong with it does not
// stop the other checks from using it: the files parse and validate, and
// only a file's mode or owner, or a check against the host, failed. Then
// Postgres, the images and the clock are still checked, and the operator
// learns everything at once.
func (d *Doctor) usableConfig() *config.Loaded {
	data, err := os.ReadFile(d.Home.ConfigPath())
	if err != nil {
		return nil
	}
	sdata, err := os.ReadFile(d.Home.SecretsPath())
	if err != nil {
		return nil
	}
	c, err := config.Parse(data)
	if err != nil {
		return nil
	}
	secrets, err := config.ParseSecrets(sdata)
	if err != nil || config.Validate(c, secrets) != nil {
		return nil
	}
	return &config.Loaded{Config: c, Secrets: secrets, Version: "(not valid)"}
}

// checkSecretsFile checks that secrets.json is a regular file of mode 0600
// owned by the user the doctor runs as (choird's user).
func (d *Doctor) checkSecretsFile(ctx context.Context) Result {
	path := d.Home.SecretsPath()
	fi, err := os.Lstat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return bad(Fail, "run `choirctl init`, then `choirctl secret set NAME` for each secret", "%s does not exist", path)
	case err != nil:
		return bad(Fail, "run the doctor as choird's user (sudo -u <user> choirctl doctor)", "%v", err)
	case !fi.Mode().IsRegular():
		return bad(Fail, "move it away and set the secrets again with `choirctl secret set`", "%s is not a regular file (%s)", path, fi.Mode().Type())
	}
	var problems []string
	var fixes []string
	mode := fi.Mode() & (fs.ModePerm | fs.ModeSetuid | fs.ModeSetgid | fs.ModeSticky)
	if mode != 0o600 {
		problems = append(problems, fmt.Sprintf("mode %#o, want 0600", octal(mode)))
		fixes = append(fixes, "chmod 600 "+path)
	}
	if uid, isOwner := ownedBy(fi); !isOwner {
		problems = append(problems, fmt.Sprintf("owned by uid %d, not by uid %d (choird's user, who runs the doctor)", uid, os.Getuid()))
		fixes = append(fixes, fmt.Sprintf("chown %d %s (as root), or run the doctor as choird's user", os.Getuid(), path))
	}
	if len(problems) > 0 {
		return bad(Fail, "run `"+strings.Join(fixes, "` and `")+"`", "%s: %s", path, strings.Join(problems, "; "))
	}
	return ok("%s: mode 0600, owned by uid %d", path, os.Getuid())
}

// A socket path and the mode it must have.
type sockPath struct {
	path   string
	dir    bool
	mode   fs.FileMode
	why    string
	absent string // "" when it must exist; else why its absence is fine
}

// checkSockets checks socks/ (0700: only choird's user reaches the admin
// socket), the admin socket (0600), socks/agent/ (0700) and each agent's
// socket directory (0711) and socket (0666), which its container's root
// reaches (see rpc.AgentSocketDirMode).
func (d *Doctor) checkSockets(ctx context.Context) Result {
	h := d.Home
	paths := []sockPath{
		{path: h.SocksDir(), dir: true, mode: 0o700, why: "only choird's user may reach the admin socket", absent: "choird creates it at start"},
		{path: h.AdminSocket(), mode: 0o600, why: "the admin socket is choirctl's only", absent: "choird is not running"},
		{path: h.AgentSocketDir(), dir: true, mode: 0o700, why: "it holds every agent's socket directory", absent: "-"},
	}
	if entries, err := os.ReadDir(h.AgentSocketDir()); err == nil {
		for _, e := range entries {
			dir := filepath.Join(h.AgentSocketDir(), e.Name())
			paths = append(paths,
				sockPath{path: dir, dir: true, mode: rpc.AgentSocketDirMode, why: "the agent's container mounts it", absent: "-"},
				sockPath{path: filepath.Join(dir, lifecycle.SocketName), mode: rpc.AgentSocketMode, why: "root in the container, without CAP_DAC_OVERRIDE, connects to it", absent: "-"})
		}
	}
	var problems, fixes, notes []string
	var checked []string
	for _, p := range paths {
		fi, err := os.Lstat(p.path)
		if errors.Is(err, fs.ErrNotExist) {
			switch p.absent {
			case "":
				problems = append(problems, p.path+" is missing")
			case "-":
			default:
				notes = append(notes, fmt.Sprintf("no %s (%s)", filepath.Base(p.path), p.absent))
			}
			continue
		}
		if err != nil {
			problems = append(problems, err.Error())
			continue
		}
		rel, _ := filepath.Rel(h.Dir, p.path)
		checked = append(checked, fmt.Sprintf("%s %#o", rel, p.mode))
		switch {
		case p.dir && !fi.IsDir():
			problems = append(problems, p.path+" is not a directory")
			fixes = append(fixes, "move "+p.path+" away (choird makes it again)")
			continue
		case !p.dir && fi.Mode()&fs.ModeSocket == 0:
			problems = append(problems, p.path+" is not a socket")
			fixes = append(fixes, "move "+p.path+" away (choird makes it again)")
			continue
		}
		if got := fi.Mode().Perm(); got != p.mode {
			problems = append(problems, fmt.Sprintf("%s has mode %#o, want %#o (%s)", p.path, got, p.mode, p.why))
			fixes = append(fixes, fmt.Sprintf("chmod %o %s", p.mode, p.path))
		}
		if uid, isOwner := ownedBy(fi); !isOwner {
			problems = append(problems, fmt.Sprintf("%s is owned by uid %d, not by choird's user (uid %d)", p.path, uid, os.Getuid()))
			fixes = append(fixes, fmt.Sprintf("chown %d %s (as root)", os.Getuid(), p.path))
		}
	}
	if len(problems) > 0 {
		fix := "run `" + strings.Join(fixes, "` and `") + "`"
		if len(fixes) == 0 {
			fix = "start choird once (it creates the socket directory 0700), or run `choirctl init`"
		}
		return bad(Fail, fix, "%s", strings.Join(problems, "; "))
	}
	detail := fmt.Sprintf("%s, owned by uid %d", strings.Join(checked, ", "), os.Getuid())
	if len(checked) == 0 {
		detail = "nothing to check yet"
	}
	if len(notes) > 0 {
		detail += "; " + strings.Join(notes, "; ")
	}
	return ok("%s", detail)
}

// checkLogs reports the size of the log directory (logs.DirSize, as
// choird measures it), and warns when the archive holds more than
// log_retention_mb allows (retention has not run).
func (d *Doctor) checkLogs(ctx context.Context) Result {
	dir := d.Home.LogsDir()
	total, err := logs.DirSize(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return ok("%s does not exist yet (choird creates it at start)", dir)
	}
	if err != nil {
		return bad(Fail, "run the doctor as choird's user, and check the directory's modes", "%v", err)
	}
	archived, err := logs.DirSize(filepath.Join(dir, "archive"))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return bad(Fail, "run the doctor as choird's user, and check the directory's modes", "%v", err)
	}
	detail := fmt.Sprintf("%s holds %s (archive %s)", dir, size(total), size(archived))
	if l := d.getLoaded(); l != nil {
		days, mb := l.Config.LogRetentionDays, l.Config.LogRetentionMB
		detail += fmt.Sprintf("; retention %s", retention(days, mb))
		if mb > 0 && archived > int64(mb)<<20 {
			return bad(Warn, "choird prunes the archive while it runs: start it, or lower log_retention_mb / log_retention_days in config.json",
				"%s, over log_retention_mb", detail)
		}
	}
	return ok("%s", detail)
}

func retention(days, mb int) string {
	parts := []string{"no age limit", "no size limit"}
	if days > 0 {
		parts[0] = fmt.Sprintf("%d days", days)
	}
	if mb > 0 {
		parts[1] = fmt.Sprintf("%d MiB", mb)
	}
	return strings.Join(parts, ", ")
}

// size is a byte count for people.
func size(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d bytes", n)
}

// ownedBy reports the file's owner and whether it is the doctor's user.
func ownedBy(fi fs.FileInfo) (uid int, isOwner bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return -1, true
	}
	return int(st.Uid), int(st.Uid) == os.Getuid()
}

// octal is a file mode as chmod writes it.
func octal(m fs.FileMode) uint32 {
	o := uint32(m.Perm())
	if m&fs.ModeSetuid != 0 {
		o |= 0o4000
	}
	if m&fs.ModeSetgid != 0 {
		o |= 0o2000
	}
	if m&fs.ModeSticky != 0 {
		o |= 0o1000
	}
	return o
}
