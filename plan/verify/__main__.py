from .. import program
from .cli import main

program.run(main)
