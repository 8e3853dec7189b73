package control

import "time"

// versionChanged logs a new config version (§22.1): its number, when, what
// changed, and metadata about it (counts, names of resources); never a
// secret value.
func (p *Plane) versionChanged(version int64, what string, args ...any) {
	args = append([]any{"config_version", version, "change", what, "changed_at", time.Now().UTC()}, args...)
	p.log.Info("config version changed", args...)
}
