module github.com/dragoman-dev/dragoman/warmer

go 1.26.0

require github.com/caarlos0/env/v11 v11.4.2 // indirect

require github.com/dragoman-dev/dragoman/proxy v0.0.0

replace github.com/dragoman-dev/dragoman/proxy => ../proxy
