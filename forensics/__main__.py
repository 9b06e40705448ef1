from forensics.cli.entry import main

main()
