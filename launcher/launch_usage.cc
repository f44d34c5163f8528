// kolorun --help's text (declared in launch_options.h).
#include "launch_options.h"
#include "setting_flags.h"

namespace kolo {
namespace launcher {

namespace {

// Before and after the settings' flags, which come from src/settings/settings_table.cc.
const char* const kBeforeSettingFlags =
    "usage: kolorun -np N [-H host:slots,... | --hostfile FILE] [options] command [args...]\n"
    "       kolorun [-np N] [options] command [args...]      (inside a Slurm allocation)\n"
    "       kolorun --min-np N [--max-np N] [--host-discovery-script FILE] [options] command [args...]\n"
    "\n"
    "Starts `command` on N ranks through Open MPI's mpirun, one rank per slot; with --gloo, without\n"
    "mpirun. Inside a Slurm allocation (sbatch, salloc) without -H or --hostfile, the job takes the\n"
    "allocation's hosts and slots, and -np defaults to its tasks; so it does from the hostfile named in\n"
    "OMPI_MCA_orte_default_hostfile (Kubeflow's MPI Operator) or PRTE_MCA_prte_default_hostfile.\n"
    "\n"
    "Elastic mode (--min-np, --max-np, --host-discovery-script or --in-place) restarts the job: after a failure\n"
    "(counted against --reset-limit), and when every rank exits 75 (planned, e.g. on the SIGUSR1\n"
    "kolorun sends when the script finds more slots). Each attempt runs min(--max-np, slots) ranks\n"
    "(the first at most -np), once there are --min-np slots. Ranks see KOLO_ELASTIC=1,\n"
    "KOLO_ELASTIC_JOB_ID and KOLO_ELASTIC_ATTEMPT (0, 1, ...).\n"
    "\n"
    "  -np, --num-proc N                 number of ranks (in a Slurm allocation: its tasks)\n"
    "  -H, --hosts H:S,...               hosts and their slots (default: this host, N slots)\n"
    "  --hostfile FILE                   hosts from a file: lines 'host slots=N' or 'host:N'\n"
    "  --verbose                         print the mpirun command before running it\n"
    "  --dry-run                         print the mpirun command, start nothing\n"
    "  --check-build                     what this kolo was built with (MPI, CUDA, NCCL, frameworks), and why not\n"
    "  -v, --version                     kolo's version\n"
    "  --config-file FILE                horovodrun's YAML config file (the command line wins over it)\n";

const char* const kAfterSettingFlags =
    "  --network-interface(s) IF[,IF]    the interfaces for MPI's control and data traffic (and NCCL's)\n"
    "  --start-timeout SECONDS           how long every host has to answer (default 30) and, elastic, every\n"
    "                                    rank of an attempt to start (default 120; else the attempt restarts)\n"
    "  --rsh-agent COMMAND               how to reach other hosts (default: ssh)\n"
    "  -p, --ssh-port PORT               ssh's port\n"
    "  -i, --ssh-identity-file FILE      ssh's identity file\n"
    "  --output-filename DIR             mpirun writes each rank's output under DIR\n"
    "  --prefix-output-with-timestamp    each output line starts with the time\n"
    "  --binding-args \"...\"             mpirun's binding in place of --bind-to none --map-by slot\n"
    "  --tcp                             Open MPI's ob1 over TCP (--mca pml ob1 --mca btl ^openib)\n"
    "  -x VAR[=VALUE]                    forward VAR to every rank, or set it\n"
    "  --min-np N                        elastic: start (and restart) once there are N slots (default 1)\n"
    "  --max-np N                        elastic: never more than N ranks\n"
    "  --host-discovery-script FILE      elastic: prints the hosts, a line each, 'host:slots' or 'host';\n"
    "                                    run through /bin/sh, in place of -H/--hostfile\n"
    "  --elastic-timeout SECONDS         elastic: how long to wait for --min-np slots (default 600)\n"
    "  --reset-limit N                   elastic: restarts allowed after failures (default: no limit)\n"
    "  --discovery-interval SECONDS      elastic: how often to run the script (default 1)\n"
    "  --blacklist-after N               elastic: leave out a host blamed for N failures (default 2; 0: never)\n"
    "  --blacklist-cooldown-range LOW HIGH   elastic: a host left out comes back after LOW*2^k s (+ up to LOW),\n"
    "                                    at most HIGH (default: never)\n"
    "  --slots-per-host N                elastic: slots of a discovered host printed without a count (1)\n"
    "  --in-place                        elastic, in place: survivors of a lost rank go on without it (with\n"
    "                                    --gloo, or Open MPI 5 with ULFM as mpirun: KOLO_MPIRUN=venv/bin/mpirun)\n"
    "  --gloo                            no mpirun: kolorun serves the job's store and starts each rank (fork\n"
    "                                    here, ssh to other hosts, srun in a Slurm allocation); they meet over Gloo\n"
    "  --mpi-args \"...\"                  passed to mpirun as they are\n"
    "  -h, --help                        this text\n"
    "\n"
    "horovodrun's other options are taken too (--mpi, --disable-cache, --stall-check,\n"
    "--torus-allreduce, --num-nccl-streams, ...): docs/migrating-from-horovod.md says what each does.\n";

}  // namespace

const std::string& usage() {
  static const std::string text = kBeforeSettingFlags + setting_flags_usage() + kAfterSettingFlags;
  return text;
}

}  // namespace launcher
}  // namespace kolo
