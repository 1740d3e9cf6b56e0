from patchctl.cli import main

main()
