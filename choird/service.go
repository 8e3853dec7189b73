package main

import (
	"bytes"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync"
	"syscall"

	"choir/internal/logs"
	"choir/internal/sdnotify"
)

// service is choird's side of running under systemd (choird/systemd/
// choird.service, Type=notify): readiness, stopping, status lines and the
// watchdog on $NOTIFY_SOCKET. Started by hand, every call is a no-op.
type service struct {
	n    *sdnotify.Notifier
	log  *slog.Logger
	stop func() // ends the watchdog pinger
}

// startService reads $NOTIFY_SOCKET and $WATCHDOG_USEC and, when a
// watchdog is asked for, starts feeding it; a malformed variable is
// logged and leaves that part off rather than failing the start.
func startService(log *slog.Logger) *service {
	s := &service{log: log.With(logs.KeySystem, "systemd"), stop: func() {}}
	var err error
	if s.n, err = sdnotify.FromEnv(); err != nil {
		s.log.Warn("systemd notifications off", logs.KeyError, err.Error())
	}
	interval, err := sdnotify.WatchdogInterval()
	if err != nil {
		s.log.Warn("systemd watchdog not fed", logs.KeyError, err.Error())
	}
	if interval > 0 && s.n.Enabled() {
		var once sync.Once // one warning, not one per ping
		s.stop = s.n.StartWatchdog(interval, func(err error) {
			once.Do(func() { s.log.Warn("systemd watchdog ping failed", logs.KeyError, err.Error()) })
		})
		s.log.Info("feeding the systemd watchdog", "interval", interval.String())
	}
	return s
}

func (s *service) notify(what string, send func() error) {
	if err := send(); err != nil {
		s.log.Warn("systemd notification failed", "state", what, logs.KeyError, err.Error())
	}
}

// status sets the line `systemctl status choird` shows.
func (s *service) status(format string, args ...any) {
	s.notify("STATUS", func() error { return s.n.Status(fmt.Sprintf(format, args...)) })
}

// ready: the admin socket serves.
func (s *service) ready() { s.notify("READY", s.n.Ready) }

// stopping: the graceful stop has begun.
func (s *service) stopping() { s.notify("STOPPING", s.n.Stopping) }

// journalMirror is the writer choird.log is mirrored to on stderr. Under
// systemd, when stderr is the journal's stream ($JOURNAL_STREAM names its
// device and inode), each JSON line loses its "time" (the journal stamps
// every line itself, so `journalctl` would show two times) and gains a
// "<N>" priority prefix from its level, which journald reads so that
// `journalctl -p warning` works. Elsewhere stderr gets the lines as they
// are in choird.log, which keeps the time.
func journalMirror(stderr io.Writer, journalStream string) io.Writer {
	f, ok := stderr.(*os.File)
	if !ok || journalStream == "" {
		return stderr
	}
	fi, err := f.Stat()
	if err != nil {
		return stderr
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok || fmt.Sprintf("%d:%d", st.Dev, st.Ino) != journalStream {
		return stderr // stderr was redirected elsewhere after systemd set it up
	}
	return journalWriter{stderr}
}

// journalWriter rewrites each slog JSON line for the journal (see
// journalMirror). slog writes one whole line per Write.
type journalWriter struct{ w io.Writer }

// syslog priorities (sd-daemon(3)) of slog's levels.
var journalPriority = map[string]string{
	`"level":"DEBUG"`: "<7>",
	`"level":"INFO"`:  "<6>",
	`"level":"WARN"`:  "<4>",
	`"level":"ERROR"`: "<3>",
}

func (j journalWriter) Write(p []byte) (int, error) {
	_, err := j.w.Write(forJournal(p))
	return len(p), err
}

func forJournal(line []byte) []byte {
	rest, ok := bytes.CutPrefix(line, []byte(`{"time":"`))
	if !ok {
		return line
	}
	end := bytes.IndexByte(rest, '"')
	if end < 0 || !bytes.HasPrefix(rest[end:], []byte(`",`)) {
		return line
	}
	rest = rest[end+2:]
	prio := ""
	for level, p := range journalPriority {
		if bytes.HasPrefix(rest, []byte(level)) {
			prio = p
		}
	}
	out := make([]byte, 0, len(prio)+1+len(rest))
	out = append(out, prio...)
	out = append(out, '{')
	return append(out, rest...)
}
