// Package docker is a client of the Docker Engine API, and the only package
// in choir that speaks to the Docker socket. It imports only the standard
// library. It is a faithful client: choir's container policy (capabilities
// dropped, read-only root, no host namespaces, which mounts are allowed)
// lives in choird and is expressed through the types here, not enforced by
// them.
//
// # Transport
//
// HTTP/1.1 over the unix socket /var/run/docker.sock, or the address in
// DOCKER_HOST (unix:///path or tcp://host:port; TLS is not supported). New
// asks GET /version (unversioned) and speaks the lower of the engine's API
// version and MaxAPIVersion; engines older than MinAPIVersion (1.41, Docker
// 20.10) are refused. Every later request is sent under /v1.41/ (the
// negotiated version), with the caller's context.
//
// # Endpoints
//
// One file per endpoint, as in moby's client package:
//
//	GET    /_ping                            ping.go               Ping
//	GET    /version                          version.go            ServerVersion
//	GET    /info                             system_info.go        Info
//	POST   /build                            image_build.go        ImageBuild
//	POST   /images/create?fromSrc=-          image_import.go       ImageImport
//	GET    /images/{name}/json               image_inspect.go      ImageInspect
//	GET    /images/json                      image_list.go         ImageList
//	POST   /images/{name}/tag                image_tag.go          ImageTag
//	DELETE /images/{name}                    image_remove.go       ImageRemove
//	POST   /containers/create                container_create.go   ContainerCreate
//	POST   /containers/{id}/start            container_start.go    ContainerStart
//	POST   /containers/{id}/stop?t=          container_stop.go     ContainerStop
//	POST   /containers/{id}/kill?signal=     container_kill.go     ContainerKill
//	POST   /containers/{id}/wait?condition=  container_wait.go     ContainerWait
//	DELETE /containers/{id}?force=&v=        container_remove.go   ContainerRemove
//	GET    /containers/{id}/json             container_inspect.go  ContainerInspect
//	GET    /containers/json?all=&filters=    container_list.go     ContainerList
//	GET    /containers/{id}/logs             container_logs.go     ContainerLogs
//	GET    /networks/{id}                    network_inspect.go    NetworkInspect
//	POST   /images/{name}/push?tag=          image_push.go         ImagePush
//	GET    /distribution/{name}/json         distribution_inspect.go  DistributionInspect
//
// and, asked of a Swarm manager (API 1.41; the types in service_spec.go):
//
//	GET    /swarm                            swarm_inspect.go      SwarmInspect
//	GET    /nodes?filters=                   node_list.go          NodeList
//	GET    /nodes/{id}                       node_inspect.go       NodeInspect
//	POST   /nodes/{id}/update?version=       node_update.go        NodeUpdate
//	POST   /services/create                  service_create.go     ServiceCreate
//	GET    /services/{id}                    service_inspect.go    ServiceInspect
//	DELETE /services/{id}                    service_remove.go     ServiceRemove
//	GET    /services/{id}/logs               service_logs.go       ServiceLogs
//	GET    /tasks?filters=                   task_list.go          TaskList
//	POST   /secrets/create                   secret_create.go      SecretCreate
//	GET    /secrets?filters=                 secret_list.go        SecretList
//	DELETE /secrets/{id}                     secret_remove.go      SecretRemove
//
// Info's Swarm part (every engine answers it, a worker too) is how a node
// learns its own node id. A Swarm call to an engine that is not a manager
// is an *APIError for which IsUnavailable (503) is true.
//
// # Registries
//
// A push, a distribution inspect and a service create carry the registry's
// credentials in the X-Registry-Auth header, the JSON object
// {username, password, serveraddress} base64url-encoded (RegistryAuth); a
// push without the header is refused, so a registry without credentials
// gets an empty object. A push answers 200 and streams JSON messages like a
// build; its digest comes in the last one, {"aux":{"Tag","Digest","Size"}}.
//
// # Errors
//
// An answer with status 400 or more is an *APIError carrying the status and
// the engine's JSON "message"; IsNotFound (404), IsConflict (409) and
// IsBadRequest (400) test for the common ones. POST /build and POST
// /images/create answer 200 and then stream JSON messages (JSONMessage), one
// per line; a failure inside that stream is {"errorDetail":{...},"error":...}
// and is returned as a *BuildError (naming the failing step and its output)
// or a *StreamError (an import or a push). A Dockerfile the engine cannot parse is refused before
// the stream starts: an *APIError with status 400.
//
// # Streams
//
// Build and import progress is delivered to a ProgressFunc as each message
// arrives. Container logs come as a LogStream the caller closes: raw for a
// container with a TTY, otherwise multiplexed in frames of an 8-byte header
// [stream, 0, 0, 0, size uint32 big endian] and the payload, which Demux
// splits into stdout and stderr; a service's logs (ServiceLogs) are framed
// the same way, gathered by the manager from the nodes. Every other call
// reads its answer fully and closes it, so connections return to the pool;
// Close releases idle ones.
package docker
