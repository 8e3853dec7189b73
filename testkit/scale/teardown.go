package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"syscall"
	"time"

	"choir/internal/docker"
)

// teardown stops and removes everything the benchmark started: the agents
// (graceful stops through choird, unless a second signal came), choird,
// any container of this home left behind, the images built for its
// agents, the servers, PGlite, the engine if it started one, and the
// scratch directory. Every step runs even when an earlier one failed.
func (b *bench) teardown() {
	if b.work == "" {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	go func() {
		select {
		case <-b.force:
			cancel()
		case <-ctx.Done():
		}
	}()
	if b.choird != nil && b.choirdDone != nil {
		if len(b.agents) > 0 {
			b.say("stopping %d agent(s)", len(b.agents))
		}
		b.stopAgents(ctx)
		b.choird.Process.Signal(syscall.SIGTERM)
		select {
		case <-b.choirdDone:
		case <-time.After(90 * time.Second):
			b.choird.Process.Kill()
			<-b.choirdDone
		}
	}
	// A fresh context: a forced stop still removes containers and images.
	rctx, rcancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer rcancel()
	if b.dc != nil {
		b.removeContainers(rctx)
		b.removeImages(rctx)
		b.dc.Close()
	}
	if b.tg != nil {
		b.tg.close()
		b.tgSrv.Close()
	}
	if b.modelSrv != nil {
		b.modelSrv.Close()
	}
	if b.pgDir != "" {
		b.script(rctx, "testkit/pgtest/pglite.sh", "stop", b.pgDir)
	}
	if b.engineDir != "" {
		b.script(rctx, "testkit/dockertest/engine.sh", "stop", b.engineDir)
	}
	if err := os.RemoveAll(b.work); err != nil {
		fmt.Fprintf(b.stderr, "scale: remove %s: %v\n", b.work, err)
	}
	b.say("stopped; everything the benchmark started is gone")
}

// stopAgents stops the started agents through choird, eight at a time.
func (b *bench) stopAgents(ctx context.Context) {
	ids := make(chan string)
	var wg sync.WaitGroup
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for id := range ids {
				if ctx.Err() != nil {
					continue
				}
				if err := b.ctl(ctx, nil, io.Discard, "agent", "stop", id); err != nil && ctx.Err() == nil {
					fmt.Fprintf(b.stderr, "scale: %v\n", err)
				}
			}
		}()
	}
	for _, a := range b.agents {
		ids <- a.id
	}
	close(ids)
	wg.Wait()
}

// instanceLabel is the label choird gives the containers of the home it
// runs on (the first 6 bytes of the SHA-256 of the home path, in hex).
func instanceLabel(home string) string {
	sum := sha256.Sum256([]byte(home))
	return "choir.instance=" + hex.EncodeToString(sum[:6])
}

// removeContainers force-removes every container of this home that is left.
func (b *bench) removeContainers(ctx context.Context) {
	cs, err := b.dc.ContainerList(ctx, docker.ContainerListOptions{All: true, Filters: docker.Filters{"label": {instanceLabel(b.home)}}})
	if err != nil {
		fmt.Fprintf(b.stderr, "scale: list containers left: %v\n", err)
		return
	}
	if len(cs) > 0 {
		b.say("removing %d container(s) left", len(cs))
	}
	for _, c := range cs {
		if err := b.dc.ContainerRemove(ctx, c.ID, docker.ContainerRemoveOptions{Force: true}); err != nil && !docker.IsNotFound(err) {
			fmt.Fprintf(b.stderr, "scale: remove container %s: %v\n", c.ID[:12], err)
		}
	}
}

// removeImages removes the agent images built for this benchmark's agents
// (every tag of choir-agent-sc-<i>) and the base image tag choird built
// for its global repo, with choir-base:latest when that names the same
// image (the next build of any other home tags it again).
func (b *bench) removeImages(ctx context.Context) {
	mine := map[string]bool{}
	for _, id := range b.built {
		mine["choir-agent-"+id] = true
	}
	imgs, err := b.dc.ImageList(ctx, docker.ImageListOptions{})
	if err != nil {
		fmt.Fprintf(b.stderr, "scale: list images: %v\n", err)
		return
	}
	// Agent images first: the base cannot go while they stand on it.
	var refs []string
	var baseID string
	for _, img := range imgs {
		for _, tag := range img.RepoTags {
			if i := strings.LastIndexByte(tag, ':'); i > 0 && mine[tag[:i]] {
				refs = append(refs, tag)
			}
			if b.baseImage != "" && tag == b.baseImage {
				baseID = img.ID
			}
		}
	}
	if baseID != "" {
		refs = append(refs, b.baseImage)
	}
	for _, img := range imgs {
		for _, tag := range img.RepoTags {
			if tag == "choir-base:latest" && baseID != "" && img.ID == baseID {
				refs = append(refs, tag)
			}
		}
	}
	for _, ref := range refs {
		if _, err := b.dc.ImageRemove(ctx, ref, docker.ImageRemoveOptions{}); err != nil && !docker.IsNotFound(err) {
			fmt.Fprintf(b.stderr, "scale: remove image %s: %v\n", ref, err)
		}
	}
}
