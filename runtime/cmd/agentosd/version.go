package main

import (
	"context"
	"fmt"
)

func printVersion(context.Context, []string) error {
	fmt.Println(version)
	return nil
}
