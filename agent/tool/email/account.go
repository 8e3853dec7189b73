package email

import (
	"crypto/x509"
	"fmt"
	"net/mail"
	"strings"

	"choir/agent/tool"
	"choir/internal/config"
)

// account is the session's email account as one call uses it.
type account struct {
	config.EmailAccount
	user, password string
	from           string
	roots          *x509.CertPool
}

// resolve reads the session's account and its secret, or says what is
// missing and where to fix it.
func resolve(dynamic func() config.Dynamic, env tool.Env) (*account, error) {
	e := dynamic().Email
	if e == nil {
		return nil, tool.Errorf(CodeNotConfigured, "no email account is bound to this session: "+
			"set agents.<id>.defaults.email in config.json (or start the agent with --email=<account>)")
	}
	secret, ok := env.Secrets[tool.SecretEmail]
	if !ok || secret == "" {
		return nil, tool.Errorf(tool.CodeSecretUnavailable, "the email account's secret is empty: "+
			"set it with `choirctl secret set %s user:password`", e.Secret)
	}
	a := &account{EmailAccount: *e}
	a.user, a.password = config.SplitCredentials(secret)
	if a.user == "" || !strings.Contains(secret, ":") {
		return nil, tool.Errorf(tool.CodeSecretUnavailable, "the email account's secret %s is not \"user:password\": "+
			"set it with `choirctl secret set %s user:password`", e.Secret, e.Secret)
	}
	a.from = e.Address
	if a.from == "" {
		if addr, err := mail.ParseAddress(a.user); err == nil && addr.Address == a.user {
			a.from = a.user
		}
	}
	roots, err := x509.SystemCertPool()
	if err != nil || roots == nil {
		roots = x509.NewCertPool()
	}
	if e.CAPEM != "" {
		certs, err := config.ParseCAPEM(e.CAPEM)
		if err != nil {
			return nil, tool.Errorf(CodeNotConfigured, "the email account's ca_pem: %v", err)
		}
		for _, c := range certs {
			roots.AddCert(c)
		}
	}
	a.roots = roots
	return a, nil
}

// CodeNotConfigured: the session has no email account, or its settings
// cannot be used.
const CodeNotConfigured = "not_configured"

// CodeServer: the mail server refused or failed; the message says which
// step and what to do.
const CodeServer = "server_error"

// serverError turns a client error into the error the model sees.
func serverError(what string, err error) error {
	return tool.Errorf(CodeServer, "%s: %v", what, err)
}

// plural returns "1 message" or "n messages".
func plural(n int, word string) string {
	if n == 1 {
		return fmt.Sprintf("1 %s", word)
	}
	return fmt.Sprintf("%d %ss", n, word)
}
