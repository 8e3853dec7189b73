package browser

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"syscall"

	"github.com/playwright-community/playwright-go"
)

// SendDir is where screenshots go, relative to the agent's workspace: the
// gateway delivers files from there when the agent sends them.
const SendDir = ".choirtmp/send"

// screenshot writes a PNG of the page into the agent's .choirtmp/send/ and
// returns its workspace-relative path and size. The file is written through
// an os.Root at the workspace (a symbolic link in the agent's workspace
// cannot send it elsewhere), under a temporary name first and renamed
// (never half a PNG), and given to the owner of send/ (the agent's user).
func (w *Worker) screenshot(agentID string, a *agentContext, page playwright.Page, in Input, remaining func() *float64) (string, int, error) {
	if w.opts.Workspace == nil {
		return "", 0, errorf(CodeUnavailable, "screenshots need the agent's workspace, which this choird does not give the browser worker")
	}
	ws, err := w.opts.Workspace(agentID)
	if err != nil {
		return "", 0, errorf(CodeUnavailable, "find %s's workspace for the screenshot: %v", agentID, err)
	}
	png, err := page.Screenshot(playwright.PageScreenshotOptions{
		FullPage: playwright.Bool(in.FullPage), Timeout: remaining(),
		Type: playwright.ScreenshotTypePng, Animations: playwright.ScreenshotAnimationsDisabled,
	})
	if err != nil {
		return "", 0, w.pageError(a, CodeFailed, "take the screenshot", err)
	}
	if len(png) > MaxScreenshot {
		return "", 0, errorf(CodeTooLarge, "the screenshot is %d bytes; at most %d (take the viewport, not full_page)", len(png), MaxScreenshot)
	}
	root, err := os.OpenRoot(ws)
	if err != nil {
		return "", 0, errorf(CodeFailed, "open %s's workspace: %v", agentID, err)
	}
	defer root.Close()
	send, err := root.OpenRoot(SendDir)
	if err != nil {
		return "", 0, errorf(CodeFailed, "open %s in %s's workspace: %v", SendDir, agentID, err)
	}
	defer send.Close()
	var rnd [4]byte
	rand.Read(rnd[:])
	name := fmt.Sprintf("browse-%s-%s-%s.png", in.Tab, w.opts.Now().UTC().Format("20060102T150405"), hex.EncodeToString(rnd[:]))
	tmp := "." + name + ".tmp"
	f, err := send.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return "", 0, errorf(CodeFailed, "write the screenshot into %s: %v", SendDir, err)
	}
	_, err = f.Write(png)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = chownLikeDir(send, tmp)
	}
	if err == nil {
		err = send.Rename(tmp, name)
	}
	if err != nil {
		send.Remove(tmp)
		return "", 0, errorf(CodeFailed, "write the screenshot into %s: %v", SendDir, err)
	}
	return SendDir + "/" + name, len(png), nil
}

// chownLikeDir gives name the owner of the directory it is in, when they
// differ (choird runs as root; the agent's tools as the workspace's owner).
func chownLikeDir(dir *os.Root, name string) error {
	dfi, err := dir.Stat(".")
	if err != nil {
		return err
	}
	ffi, err := dir.Lstat(name)
	if err != nil {
		return err
	}
	ds, ok1 := dfi.Sys().(*syscall.Stat_t)
	fs, ok2 := ffi.Sys().(*syscall.Stat_t)
	if !ok1 || !ok2 || (ds.Uid == fs.Uid && ds.Gid == fs.Gid) {
		return nil
	}
	return dir.Lchown(name, int(ds.Uid), int(ds.Gid))
}
