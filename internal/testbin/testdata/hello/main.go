// Command hello prints its uid and a greeting, for testbin's tests.
package main

import (
	"fmt"
	"os"
)

var greeting = "hello"

func main() {
	fmt.Println(os.Getuid(), greeting)
}
