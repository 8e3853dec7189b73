package main

import (
	"context"
	"crypto/x509"
	"fmt"

	"choir/choird/control"
	"choir/choird/lifecycle"
	"choir/choird/swarm"
	"choir/internal/config"
	"choir/internal/docker"
	"choir/internal/rpc"
)

// agentRuntime is where agents run (config.json's runtime): nil for the
// local engine (the lifecycle's default), or the Swarm whose manager dc
// is, with the registry's credentials read from secrets.json at each use.
func agentRuntime(ctx context.Context, plane *control.Plane, dc *docker.Client) (lifecycle.Runtime, error) {
	r := plane.Config().Config.Runtime
	if config.RuntimeKind(r) != config.RuntimeSwarm {
		return nil, nil
	}
	if _, err := dc.SwarmInspect(ctx); err != nil {
		return nil, fmt.Errorf("runtime.kind is %q but the engine at %s is not a Swarm manager (%v): point DOCKER_HOST at a manager's engine, or set runtime.kind to %q",
			config.RuntimeSwarm, dc.Host(), err, config.RuntimeLocal)
	}
	rt := &swarm.Runtime{Engine: dc, Registry: r.Registry}
	if name := r.RegistrySecret; name != "" {
		rt.Auth = func() (docker.RegistryAuth, error) {
			v, ok := plane.Config().Secrets[name]
			if !ok {
				return docker.RegistryAuth{}, fmt.Errorf("no secret named %q in secrets.json: run `choirctl secret set %s` (user:password)", name, name)
			}
			user, password := config.SplitCredentials(v)
			return docker.RegistryAuth{Username: user, Password: password}, nil
		}
	}
	return rt, nil
}

// mutualTLS gives the agents of the swarm runtime, which run on other
// hosts, client certificates of choird's agent CA (a session's made at its
// box's creation, renewed by RENEW_CERT) and returns the pool the agents'
// listener must then require them from; nil for the local runtime, whose
// agents present their lease token alone, as before.
func mutualTLS(home config.Home, o options, rt lifecycle.Runtime, srv *rpc.Server) (*x509.CertPool, error) {
	sr, ok := rt.(*swarm.Runtime)
	if !ok || o.transport != rpc.TransportHTTP {
		return nil, nil
	}
	ca, err := loadAgentCA(home.Dir)
	if err != nil {
		return nil, fmt.Errorf("the agents' CA, which signs their client certificates: %w", err)
	}
	sr.ClientCert = ca.NewClientCert
	srv.Certs = ca
	return ca.Pool(), nil
}

// publisher is the build's Publish for the swarm runtime, nil otherwise.
func publisher(rt lifecycle.Runtime) func(ctx context.Context, image string) (string, error) {
	sr, ok := rt.(*swarm.Runtime)
	if !ok {
		return nil
	}
	return func(ctx context.Context, image string) (string, error) {
		p, err := sr.Publish(ctx, image)
		return p.Ref, err
	}
}
