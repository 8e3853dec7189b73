package main

import (
	"fmt"
	"io"

	"choir/internal/config"
)

// check is `choird --check`: it validates both files, prints every problem,
// and touches nothing.
func check(o options, stdout, stderr io.Writer) int {
	home, err := resolveHome(o.home)
	if err != nil {
		fmt.Fprintf(stderr, "choird: %v\n", err)
		return 1
	}
	l, err := config.Load(home)
	if err != nil {
		fmt.Fprintf(stderr, "choird: %s is invalid:\n%v\n", home.Dir, indentProblems(err))
		return 1
	}
	fmt.Fprintf(stdout, "%s and %s are valid (config %s).\n", home.ConfigPath(), home.SecretsPath(), l.Version)
	return 0
}

func resolveHome(flagValue string) (config.Home, error) {
	if flagValue != "" {
		return config.Home{Dir: flagValue}, nil
	}
	return config.DefaultHome()
}

// indentProblems lists each problem on its own line.
func indentProblems(err error) string {
	if ps, ok := err.(config.Problems); ok {
		out := ""
		for _, p := range ps {
			out += "  " + p.String() + "\n"
		}
		return out[:len(out)-1]
	}
	return "  " + err.Error()
}
