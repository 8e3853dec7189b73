package main

import (
	"context"
	"fmt"
	"io"
	"os/signal"
	"syscall"

	choirdoctor "choir/choird/doctor"
)

// doctor is `choird --doctor`: it checks the installation, whether or not
// a choird runs on it, prints one line a check (or JSON) and touches
// nothing. Exit status 1 when a check failed.
func doctor(o options, stdout, stderr io.Writer) int {
	home, err := resolveHome(o.home)
	if err != nil {
		fmt.Fprintf(stderr, "choird: %v\n", err)
		return 1
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	d := &choirdoctor.Doctor{Home: home}
	rep := d.Run(ctx)
	if o.json {
		err = rep.WriteJSON(stdout)
	} else {
		err = rep.WriteText(stdout)
	}
	if err != nil {
		fmt.Fprintf(stderr, "choird: write the report: %v\n", err)
		return 1
	}
	if !rep.OK {
		return 1
	}
	return 0
}
