! surrogate-mpi.f90 - mpikvs as a surrogate cache from a program that
! uses `use mpi` (integer communicators): round each cell's inputs to a
! key, look it up, and compute and store only on a miss.
!
!   mpifort surrogate-mpi.f90 $(pkg-config --cflags --libs mpikvs-fortran) -o surrogate-mpi
!   mpirun -np 4 ./surrogate-mpi PREFIX/share/doc/mpikvs/examples/chemistry.json
!
! The table "chemistry" of the example chemistry.json, as
! surrogate-f08.f90, one get and one put at a time.  Rank 0 prints the
! job's hit rate.
program surrogate_mpi
  use, intrinsic :: iso_fortran_env, only: int8, int64, real64, error_unit
  use mpi
  use mpikvs
  implicit none

  integer, parameter :: NIN = 10, NOUT = 13, NCELLS = 500, NSTEPS = 10
  real(real64) :: x(NIN), y(NOUT)
  integer(int8), allocatable :: key(:)
  type(mpikvs_t) :: kvs
  type(mpikvs_options) :: opt
  type(mpikvs_stats) :: st
  integer :: ierr, rank, rc, step, c, f, j

  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  if (command_argument_count() > 0) call get_command_argument(1, opt%config)
  opt%table = 'chemistry'
  rc = mpikvs_open(MPI_COMM_WORLD, kvs, opt)        ! an integer communicator
  if (rc /= MPIKVS_OK) call fail('mpikvs_open', rc)
  allocate(key(mpikvs_key_size(kvs)))

  do step = 0, NSTEPS - 1
     do c = 0, NCELLS - 1
        do f = 1, NIN - 1
           x(f) = 1e-3_real64 * (1 + mod(c + step, 50)) * f * &
                (1 + 1e-9_real64 * rank)
        end do
        x(NIN) = 60.0_real64
        rc = mpikvs_round_key(kvs, x, key)
        if (rc /= MPIKVS_OK) call fail('mpikvs_round_key', rc)
        rc = mpikvs_get(kvs, key, y)
        if (rc == MPIKVS_MISS) then
           do j = 0, NOUT - 1                       ! the expensive call
              y(j + 1) = x(mod(j, NIN - 1) + 1) / &
                   (1 + x(mod(j, NIN - 1) + 1)**2) + 1e-3_real64 * j * x(NIN)
           end do
           rc = mpikvs_put(kvs, key, y)
        end if
        if (rc /= MPIKVS_OK) call fail('mpikvs_get/put', rc)
     end do
     rc = mpikvs_fence(kvs)
     if (rc /= MPIKVS_OK) call fail('mpikvs_fence', rc)
  end do

  rc = mpikvs_stats(kvs, ior(MPIKVS_SCOPE_JOB, MPIKVS_SINCE_OPEN), st)
  if (rc /= MPIKVS_OK) call fail('mpikvs_stats', rc)
  if (rank == 0) write (*, '(a,i0,a,i0,a,f0.1,a)') 'surrogate-mpi: gets ', &
       st%gets, ', hits ', st%hits, ' (', &
       100.0_real64 * real(st%hits, real64) / real(max(st%gets, 1_int64), real64), ' %)'
  rc = mpikvs_close(kvs)
  if (rc /= MPIKVS_OK) call fail('mpikvs_close', rc)
  call MPI_Finalize(ierr)

contains

  subroutine fail(call, rc)
    character(len=*), intent(in) :: call
    integer, intent(in) :: rc

    write (error_unit, '(5a)') 'surrogate-mpi: ', call, ': ', &
         mpikvs_strerror(rc), ': ' // mpikvs_last_error(kvs)
    call MPI_Abort(MPI_COMM_WORLD, 1, ierr)
  end subroutine fail
end program surrogate_mpi
