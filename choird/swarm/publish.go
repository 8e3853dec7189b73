package swarm

import (
	"archive/tar"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path"
	"slices"
	"strings"

	"choir/internal/docker"
)

// Published is an image in the registry.
type Published struct {
	Ref     string // "registry:port/name@sha256:…": what the service runs
	ImageID string // the local image's id, the config the digest's manifest names
}

// Publish makes the local image ref ("choir-agent-<id>:<version>")
// runnable on every node: it refuses an image holding a setuid or setgid
// file (API 1.41 services cannot set no-new-privileges, so such a file
// would let a tool gain the capabilities the box dropped), tags it
// registry/name:version, pushes it with the registry's credentials and
// returns it by digest. The build calls it when the swarm runtime is
// configured, so a build that cannot run on the swarm fails; a start calls
// it again (a no-op for an image already published by this choird).
func (rt *Runtime) Publish(ctx context.Context, ref string) (Published, error) {
	img, err := rt.Engine.ImageInspect(ctx, ref)
	if err != nil {
		return Published{}, fmt.Errorf("publish %s: %w", ref, err)
	}
	rt.mu.Lock()
	p, ok := rt.published[img.ID]
	rt.mu.Unlock()
	if ok {
		return p, nil
	}
	if err := rt.CheckNoSetuid(ctx, img.ID, ref); err != nil {
		return Published{}, err
	}
	repo, tag := docker.SplitRef(ref)
	if tag == "" {
		tag = "latest"
	}
	remote := rt.Registry + "/" + repo
	if err := rt.Engine.ImageTag(ctx, img.ID, remote+":"+tag); err != nil {
		return Published{}, fmt.Errorf("publish %s: tag it %s:%s: %w", ref, remote, tag, err)
	}
	auth, err := rt.auth()
	if err != nil {
		return Published{}, err
	}
	res, err := rt.Engine.ImagePush(ctx, remote+":"+tag, auth, nil)
	if err != nil {
		return Published{}, fmt.Errorf("publish %s to the registry %s (runtime.registry): %w", ref, rt.Registry, err)
	}
	p = Published{Ref: remote + "@" + res.Digest, ImageID: img.ID}
	rt.mu.Lock()
	if rt.published == nil {
		rt.published = map[string]Published{}
	}
	rt.published[img.ID] = p
	rt.mu.Unlock()
	return p, nil
}

// CheckNoSetuid refuses an image any of whose files, as its layers leave
// them, is setuid or setgid, naming them and the fix.
func (rt *Runtime) CheckNoSetuid(ctx context.Context, id, ref string) error {
	rc, err := rt.Engine.ImageSave(ctx, id)
	if err != nil {
		return fmt.Errorf("check %s for setuid files: export it: %w", ref, err)
	}
	defer rc.Close()
	found, err := SetuidFiles(rc)
	if err != nil {
		return fmt.Errorf("check %s for setuid files: %w", ref, err)
	}
	if len(found) == 0 {
		return nil
	}
	shown := found
	if len(shown) > 8 {
		shown = append(shown[:8:8], fmt.Sprintf("and %d more", len(found)-8))
	}
	return fmt.Errorf("image %s holds setuid or setgid files (%s): on the swarm runtime no-new-privileges cannot be set (Engine API 1.41), so they would let a tool regain the capabilities its box dropped; "+
		"add `RUN find / -xdev -perm /6000 -type f -exec chmod ug-s {} +` at the end of Dockerfile.base (or the agent's Dockerfile) and build again", ref, strings.Join(shown, ", "))
}

// ErrNotAnImage says the stream is not what `docker save` writes.
var ErrNotAnImage = errors.New("not an image archive (no manifest.json)")

// SetuidFiles reads a `docker save` stream and returns, sorted, the paths
// of regular files that are setuid or setgid once the layers are applied in
// order (a later layer's file or whiteout replaces an earlier one's).
func SetuidFiles(r io.Reader) ([]string, error) {
	type layer struct {
		setuid   map[string]bool // path → setuid/setgid (false: a plain file replaces)
		whiteout []string        // paths deleted (".wh.NAME"); a directory prefix for ".wh..wh..opq"
	}
	layers := map[string]*layer{}
	var manifest []struct{ Layers []string }
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		switch {
		case h.Name == "manifest.json":
			if err := json.NewDecoder(tr).Decode(&manifest); err != nil {
				return nil, fmt.Errorf("manifest.json: %w", err)
			}
		case strings.HasSuffix(h.Name, ".tar") || strings.HasSuffix(h.Name, "/layer.tar"):
			l := &layer{setuid: map[string]bool{}}
			lt := tar.NewReader(tr)
			for {
				f, err := lt.Next()
				if err == io.EOF {
					break
				}
				if err != nil {
					return nil, fmt.Errorf("layer %s: %w", h.Name, err)
				}
				p := "/" + strings.TrimPrefix(path.Clean("/"+f.Name), "/")
				dir, base := path.Split(p)
				switch {
				case base == ".wh..wh..opq":
					l.whiteout = append(l.whiteout, dir)
				case strings.HasPrefix(base, ".wh."):
					l.whiteout = append(l.whiteout, dir+strings.TrimPrefix(base, ".wh."))
				default:
					l.setuid[p] = f.Typeflag == tar.TypeReg && f.Mode&(04000|02000) != 0
				}
			}
			layers[h.Name] = l
		}
	}
	if manifest == nil {
		return nil, ErrNotAnImage
	}
	state := map[string]bool{}
	for _, m := range manifest {
		for _, name := range m.Layers {
			l, ok := layers[name]
			if !ok {
				return nil, fmt.Errorf("manifest.json names layer %s, which the archive lacks", name)
			}
			for _, w := range l.whiteout {
				for p := range state {
					if p == w || strings.HasPrefix(p, strings.TrimSuffix(w, "/")+"/") {
						delete(state, p)
					}
				}
			}
			for p, s := range l.setuid {
				state[p] = s
			}
		}
	}
	var out []string
	for p, s := range state {
		if s {
			out = append(out, p)
		}
	}
	slices.Sort(out)
	return out, nil
}
