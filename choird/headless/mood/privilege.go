package mood

import (
	"path"
	"slices"
	"strings"
)

// Privilege proximity (seed 002 §4): work near credentials, CI
// configuration, deploy scripts, the repository's doc-tier file or choir's
// own configuration reaches further than its diff looks. Sensitive names
// what a run's patch and work item come near; the guard table moves such
// work to PARANOID until a PARANOID run of it has happened (Facts.Hardened).

// sensitiveClasses are the classes Sensitive reports, in the order it
// reports them.
const (
	ClassCredentials = "credentials"
	ClassCI          = "ci config"
	ClassDeploy      = "deploy scripts"
	ClassChoir       = "choir config" // .choir/ (the doc-tier file .choir/docs.json) and choir's config.json
)

// credentialNames are file names (lower case) that hold credentials.
var credentialNames = []string{".env", ".netrc", ".npmrc", ".pypirc", ".git-credentials", ".htpasswd",
	"id_rsa", "id_dsa", "id_ecdsa", "id_ed25519", "authorized_keys", "known_hosts", "credentials", "credentials.json",
	"secrets.json", "secrets.yaml", "secrets.yml", "service-account.json", "kubeconfig", ".dockercfg"}

// credentialExts are extensions of key and certificate stores.
var credentialExts = []string{".pem", ".key", ".p12", ".pfx", ".jks", ".keystore", ".kdbx", ".gpg", ".asc"}

// credentialDirs are directories whose every file is a credential.
var credentialDirs = []string{".ssh", ".gnupg", ".aws", ".docker", ".kube", "secrets"}

// ciPaths are CI configuration (a directory ends in /).
var ciPaths = []string{".github/workflows/", ".github/actions/", ".gitlab-ci.yml", ".gitlab/", ".circleci/",
	"jenkinsfile", ".travis.yml", "azure-pipelines.yml", ".buildkite/", ".drone.yml", "bitbucket-pipelines.yml",
	".woodpecker/", ".woodpecker.yml", "testkit/ci.sh", ".pre-commit-config.yaml"}

// deployNames are deploy scripts and infrastructure definitions, matched
// on the file name (or a directory of the path, for those ending in /).
var deployNames = []string{"deploy/", "deployment/", "deployments/", "k8s/", "helm/", "charts/", "terraform/",
	"ansible/", "infra/", "procfile", "fly.toml", "netlify.toml", "vercel.json", "serverless.yml",
	"docker-compose.yml", "docker-compose.yaml", "compose.yaml"}

// sensitiveWords, in a work item's text, say the work is about credentials
// or deployment even when no path is named.
var sensitiveWords = map[string]string{
	"credential": ClassCredentials, "credentials": ClassCredentials, "secret": ClassCredentials, "secrets": ClassCredentials,
	"password": ClassCredentials, "passwords": ClassCredentials, "api-key": ClassCredentials, "apikey": ClassCredentials,
	"private-key": ClassCredentials, "ssh-key": ClassCredentials,
	"deploy": ClassDeploy, "deploys": ClassDeploy, "deployment": ClassDeploy, "release-pipeline": ClassCI,
}

// ClassifyPath says which sensitive class a repository path belongs to
// ("" for none). It looks at the path alone, never at the file.
func ClassifyPath(p string) string {
	p = strings.ToLower(path.Clean(strings.TrimPrefix(strings.ReplaceAll(p, "\\", "/"), "./")))
	base := path.Base(p)
	segs := strings.Split(p, "/")
	switch {
	case slices.Contains(segs, ".choir") || p == "choir.json" || strings.HasSuffix(p, "/.choir.json"):
		return ClassChoir
	case slices.Contains(credentialNames, base) || strings.HasPrefix(base, ".env.") || strings.HasPrefix(base, "id_rsa") ||
		slices.Contains(credentialExts, path.Ext(base)) || slices.ContainsFunc(segs[:len(segs)-1], func(s string) bool { return slices.Contains(credentialDirs, s) }):
		return ClassCredentials
	}
	for _, c := range ciPaths {
		if d, ok := strings.CutSuffix(c, "/"); ok {
			if strings.HasPrefix(p, d+"/") || strings.Contains(p, "/"+d+"/") {
				return ClassCI
			}
		} else if p == c || base == c {
			return ClassCI
		}
	}
	for _, d := range deployNames {
		if dir, ok := strings.CutSuffix(d, "/"); ok {
			if slices.Contains(segs[:len(segs)-1], dir) {
				return ClassDeploy
			}
		} else if base == d {
			return ClassDeploy
		}
	}
	if strings.HasPrefix(base, "deploy") && path.Ext(base) != "" && path.Ext(base) != ".md" {
		return ClassDeploy // deploy.sh, deploy-prod.py
	}
	return ""
}

// Sensitive lists what a run comes near: each path of files (its patch)
// that ClassifyPath classes, and each word or path-like word of text (its
// work item's description and acceptance criteria) that names a sensitive
// thing, as "<class>: <what>", sorted and without duplicates. The same
// input always gives the same list.
func Sensitive(files []string, text string) []string {
	var out []string
	for _, f := range files {
		if c := ClassifyPath(f); c != "" {
			out = append(out, c+": "+f)
		}
	}
	for _, w := range strings.Fields(text) {
		w = strings.TrimRight(strings.TrimLeft(w, "`'\"([{<"), "`'\")]}>,;:!?.")
		if w == "" {
			continue
		}
		if c, ok := sensitiveWords[strings.ToLower(w)]; ok {
			out = append(out, c+": "+strings.ToLower(w))
			continue
		}
		if strings.ContainsAny(w, "/.") && !strings.Contains(w, "://") {
			if c := ClassifyPath(w); c != "" {
				out = append(out, c+": "+w)
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}
