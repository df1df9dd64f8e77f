// Command fusebox runs the Fusebox server and its maintenance commands.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.LookupEnv, os.Stdin, os.Stdout, os.Stderr); err != nil {
		if errors.Is(err, errChanges) {
			os.Exit(2)
		}
		fmt.Fprintln(os.Stderr, "fusebox:", err)
		os.Exit(1)
	}
}
