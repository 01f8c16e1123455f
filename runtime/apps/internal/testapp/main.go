// Command testapp is a tiny app for the launcher's and the supervisor's
// tests: `testapp serve --server S` serves on $AGENTOS_SOCKET like a
// provider app (S picks a behaviour), and its debug commands print who
// and where it runs.
//
//	serve --server main      listen; answer each connection with one JSON line, then close it
//	serve --server dies      exit 3 at once
//	serve --server mute      never listen
//	serve --server stubborn  listen and ignore SIGTERM
//	id                       run `id -u`
//	env                      print the environment, sorted
//	pwd                      print the working directory
//	flood N                  write N bytes to stdout and to stderr
//	exit N                   exit with status N
//	sleep                    sleep until killed
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"slices"
	"strconv"
	"syscall"
	"time"

	"github.com/agentoslab/agentlab/runtime/transport"
)

func main() { os.Exit(run(os.Args[1:])) }

func run(args []string) int {
	if len(args) == 0 {
		fmt.Fprintln(os.Stderr, "testapp: missing command")
		return 2
	}
	switch args[0] {
	case "serve":
		if len(args) != 3 || args[1] != "--server" {
			fmt.Fprintln(os.Stderr, "usage: testapp serve --server S")
			return 2
		}
		return serve(args[2])
	case "groups":
		// The supplementary groups the launcher gave (inet: the network).
		gs, err := os.Getgroups()
		if err != nil {
			fmt.Fprintln(os.Stderr, "testapp: groups:", err)
			return 1
		}
		fmt.Println(gs)
		return 0
	case "id":
		cmd := exec.Command("id", "-u")
		cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
		if err := cmd.Run(); err != nil {
			fmt.Fprintln(os.Stderr, "testapp: id:", err)
			return 1
		}
		return 0
	case "env":
		env := os.Environ()
		slices.Sort(env)
		for _, e := range env {
			fmt.Println(e)
		}
		return 0
	case "pwd":
		wd, _ := os.Getwd()
		fmt.Println(wd)
		return 0
	case "flood":
		n, _ := strconv.Atoi(args[1])
		out := bufio.NewWriter(os.Stdout)
		errw := bufio.NewWriter(os.Stderr)
		for i := 0; i < n; i++ {
			out.WriteByte('o')
			errw.WriteByte('e')
		}
		out.Flush()
		errw.Flush()
		return 0
	case "exit":
		n, _ := strconv.Atoi(args[1])
		fmt.Println("exiting with", n)
		return n
	case "sleep":
		time.Sleep(time.Hour)
		return 0
	}
	fmt.Fprintln(os.Stderr, "testapp: unknown command", args[0])
	return 2
}

func serve(server string) int {
	fmt.Fprintf(os.Stderr, "testapp: serving %s as uid %d\n", server, os.Getuid())
	switch server {
	case "dies":
		return 3
	case "mute":
		time.Sleep(time.Hour)
		return 0
	case "stubborn":
		signal.Ignore(syscall.SIGTERM)
	}
	ctx := context.Background()
	if server != "stubborn" {
		var stop context.CancelFunc
		ctx, stop = signal.NotifyContext(ctx, syscall.SIGTERM)
		defer stop()
	}
	var svc transport.Service
	err := svc.Start(ctx, os.Getenv("AGENTOS_SOCKET"), func(*transport.Conn) transport.Admission {
		return transport.Admission{Serve: func(_ context.Context, c *transport.Conn) {
			wd, _ := os.Getwd()
			b, _ := json.Marshal(map[string]any{"uid": os.Getuid(), "package": os.Getenv("AGENTOS_PACKAGE"), "server": server, "cwd": wd})
			c.Write(append(b, '\n'))
		}}
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "testapp:", err)
		return 1
	}
	svc.Wait()
	return 0
}
