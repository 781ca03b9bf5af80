// Command etcd is upstream's etcd main (go.etcd.io/etcd/server/v3), built from Go modules for the e2e tests.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() {
	etcdmain.Main(os.Args)
}
