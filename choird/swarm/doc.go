// Package swarm runs agent boxes as Docker Swarm services: the second
// implementation of lifecycle.Runtime, on the same hand-written Engine API
// client (internal/docker) as the local one, asked of the manager whose
// engine choird uses.
//
// A box is a service of one replica whose task never restarts (choird, not
// Swarm, decides what follows a crash), translated from the one §15.3
// profile the lifecycle builds (Translate): what API 1.41 services carry
// is carried, and what they cannot is refused, saying why, except
// no-new-privileges, which 1.41 lacks and which Publish stands in for by
// refusing an image that holds a setuid or setgid file. The image runs by
// digest from the configured registry, never by tag; the lease token and
// choird's CA reach choir-agent as Swarm secrets (files on a tmpfs,
// root's only), never as environment or labels; the workspace's node
// (workspaces.<name>.node) places the box by the node label choir.node.
package swarm
