from harness_cli.cli import main

main()
