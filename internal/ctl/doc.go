// Package ctl is the admin protocol between choirctl and choird: JSON over
// HTTP on choird's admin socket, ~/.choir.d/socks/ctl.sock (mode 0600 in a
// 0700 directory; never mounted into a container, and distinct from the
// agents' socket, so an agent can never reach an admin command).
//
//	GET  /v1/status               → Status
//	GET  /v1/config               → the running config.json (secret names only)
//	GET  /v1/logs/<source>        → text/plain: the log's current contents,
//	                                 then, with ?follow=1, new lines as they
//	                                 are written until the client disconnects
//
// Errors are {"error":{"code","message"}} with a fitting HTTP status, the
// same shape as the agent protocol's. The socket's file mode is the
// authentication: only choird's user can connect.
package ctl
