"""Precompiled templates/ (tools/compile_templates.py): used while these hashes and this jinja2 hold."""

JINJA2 = '3.1.6'
SOURCES = {
    'slurm/_env.sh.j2': '18ef79af94516b5add1e3269b6369235675aa26b82c53e6da2358a6c04f36388',
    'slurm/_head.sh.j2': '06bae8201ae2d2ffc4f9f06b7982fe0c417b877dbf059a9d13d8275f994d4105',
    'slurm/_nodes.sh.j2': '30eb49d4e6e17e443d79bdf39e0a0c7f0921c05e850b3bcf6328471aa01b5df2',
    'slurm/_tail.sh.j2': '0326ce577229f3d7a3343dbbe595879ee43865f304baa4ca3a8a2c52bb6d7d47',
    'slurm/ray.sh.j2': 'd473f6c432e17d708f1ca867709140907abc2d58b344cc35d79d00588fb5eafb',
    'slurm/torchrun.sh.j2': 'a499f80b14a8a9f2ac7f13748e164334dfd0323260158c90691b55cb42d49905',
}
