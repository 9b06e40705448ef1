from forensics.cli.app import main

main()
