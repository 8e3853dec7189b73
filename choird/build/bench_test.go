package build

import (
	"context"
	"sort"
	"strings"
	"testing"
	"time"

	"choir/internal/docker"
	"choir/testkit/imagetest"
)

// BenchmarkBuild times Build of an agent with one tool on the reference
// Dockerfile.base (Debian), each iteration after a commit to the agent
// repo: warm with the base image already built, cold with the base image
// removed first, so that it is built again without the engine's layer
// cache. The previous agent image is removed in both. It reports the median and the agent
// image's size. Run it with -benchtime=5x.
func BenchmarkBuild(b *testing.B) {
	for _, cold := range []bool{false, true} {
		name := "warm"
		if cold {
			name = "cold"
		}
		b.Run(name, func(b *testing.B) {
			f := newFixture(b)
			imagetest.Debian(b, f.c)
			f.global.commit(files{"Dockerfile.base": DockerfileBase, "-tools": "", "-skills": ""})
			f.agent.commit(files{"Dockerfile": "FROM choir-base\n", "-tools/acme.echo": "", "-tools/acme.echo.json": "", "-skills": ""})
			res := f.mustBuild()
			var times []time.Duration
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				f.agent.commit(files{"tools/acme.greet.json": toolManifest("acme.greet", "greet "+nonce())})
				// The previous agent image goes, so that no two images of the
				// agent share a second (Build would wait for the next one).
				removeImages(b, f.c, f.agentID, cold)
				if cold {
					f.c.ImageRemove(context.Background(), res.BaseImage, docker.ImageRemoveOptions{Force: true})
				}
				b.StartTimer()
				start := time.Now()
				res = f.mustBuild()
				times = append(times, time.Since(start))
				if cold && strings.Contains(f.progress(), "base: ---> Using cache") {
					b.Fatalf("a cold build used the layer cache:\n%s", f.progress())
				}
				if res.BaseBuilt != cold || !res.AgentBuilt {
					b.Fatalf("BaseBuilt %v, AgentBuilt %v; want base built %v, agent built", res.BaseBuilt, res.AgentBuilt, cold)
				}
			}
			b.StopTimer()
			sort.Slice(times, func(i, j int) bool { return times[i] < times[j] })
			b.ReportMetric(times[len(times)/2].Seconds(), "s/median")
			img, err := f.c.ImageInspect(f.ctx, res.Image)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(img.Size), "image-bytes")
		})
	}
}
