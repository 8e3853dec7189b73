package main

import (
	"context"
	"fmt"

	"choir/choird/control"
	"choir/choird/lifecycle"
	"choir/choird/swarm"
	"choir/internal/config"
	"choir/internal/docker"
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
