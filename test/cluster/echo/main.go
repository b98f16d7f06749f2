// Command echo is the test pods' server (in the box image of
// test/cluster): on every TCP connection to -port it writes one line,
// "<hostname> <the client's address>", and closes it, so a client learns
// which pod answered and which source address that pod saw.
package main

import (
	"flag"
	"fmt"
	"log"
	"net"
	"os"
	"strconv"
)

func main() {
	port := flag.Int("port", 8080, "TCP port")
	flag.Parse()
	host, _ := os.Hostname()
	l, err := net.Listen("tcp", ":"+strconv.Itoa(*port))
	if err != nil {
		log.Fatal(err)
	}
	for {
		c, err := l.Accept()
		if err != nil {
			log.Fatal(err)
		}
		fmt.Fprintf(c, "%s %s\n", host, c.RemoteAddr())
		c.Close()
	}
}
