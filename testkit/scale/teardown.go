package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"sync"
	"time"

	"choir/internal/docker"
)

// teardown stops and removes everything the benchmark started: choird
// (which stops its agents gracefully, all at once; a second signal or
// choirdStopWait kills it instead), any container of this home left
// behind, the images built for its agents, the servers, PGlite, the engine
// if it started one, and the scratch directory. Every step runs even when
// an earlier one failed.
func (b *bench) teardown() {
	if b.Work == "" {
		return
	}
	if b.ChoirdRunning() {
		b.Say("stopping choird and its %d agent(s)", len(b.agents))
		b.StopChoird(b.force, choirdStopWait)
	}
	rctx, rcancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer rcancel()
	if b.dc != nil {
		b.removeContainers(rctx)
		b.removeImages(rctx)
		b.dc.Close()
	}
	if b.tg != nil {
		b.tg.Close()
	}
	if b.modelSrv != nil {
		b.modelSrv.Close()
	}
	b.StopPostgres(rctx)
	if b.engineDir != "" {
		b.Script(rctx, "testkit/dockertest/engine.sh", "stop", b.engineDir)
	}
	b.RemoveWork()
	b.Say("stopped; everything the benchmark started is gone")
}

// choirdStopWait bounds choird's graceful stop of all its agents at once.
const choirdStopWait = 3 * time.Minute

// instanceLabel is the label choird gives the containers of the home it
// runs on (the first 6 bytes of the SHA-256 of the home path, in hex).
func instanceLabel(home string) string {
	sum := sha256.Sum256([]byte(home))
	return "choir.instance=" + hex.EncodeToString(sum[:6])
}

// removeContainers force-removes every container of this home that is left.
func (b *bench) removeContainers(ctx context.Context) {
	cs, err := b.dc.ContainerList(ctx, docker.ContainerListOptions{All: true, Filters: docker.Filters{"label": {instanceLabel(b.Home)}}})
	if err != nil {
		fmt.Fprintf(b.stderr, "scale: list containers left: %v\n", err)
		return
	}
	if len(cs) > 0 {
		b.Say("removing %d container(s) left", len(cs))
	}
	ids := make(chan string)
	var wg sync.WaitGroup
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for id := range ids {
				if err := b.dc.ContainerRemove(ctx, id, docker.ContainerRemoveOptions{Force: true}); err != nil && !docker.IsNotFound(err) {
					fmt.Fprintf(b.stderr, "scale: remove container %s: %v\n", id[:12], err)
				}
			}
		}()
	}
	for _, c := range cs {
		ids <- c.ID
	}
	close(ids)
	wg.Wait()
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
	// Agent images first, eight at a time: the base cannot go while they
	// stand on it.
	// An image's tags go one after another (two removals of the same
	// image at once fail with "unrecognized image ID").
	var agentRefs [][]string
	var baseRefs []string
	var baseID string
	for _, img := range imgs {
		var tags []string
		for _, tag := range img.RepoTags {
			if i := strings.LastIndexByte(tag, ':'); i > 0 && mine[tag[:i]] {
				tags = append(tags, tag)
			}
			if b.baseImage != "" && tag == b.baseImage {
				baseID = img.ID
			}
		}
		if len(tags) > 0 {
			agentRefs = append(agentRefs, tags)
		}
	}
	if baseID != "" {
		baseRefs = append(baseRefs, b.baseImage)
		for _, img := range imgs {
			for _, tag := range img.RepoTags {
				if tag == "choir-base:latest" && img.ID == baseID {
					baseRefs = append(baseRefs, tag)
				}
			}
		}
	}
	remove := func(ref string) {
		if _, err := b.dc.ImageRemove(ctx, ref, docker.ImageRemoveOptions{}); err != nil && !docker.IsNotFound(err) {
			fmt.Fprintf(b.stderr, "scale: remove image %s: %v\n", ref, err)
		}
	}
	refs := make(chan []string)
	var wg sync.WaitGroup
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for tags := range refs {
				for _, ref := range tags {
					remove(ref)
				}
			}
		}()
	}
	for _, tags := range agentRefs {
		refs <- tags
	}
	close(refs)
	wg.Wait()
	for _, ref := range baseRefs {
		remove(ref)
	}
}
