! surrogate-f08.f90 - examples/batches.c in Fortran with mpi_f08: start
! the lookups of all cells at once, poll while the home nodes answer,
! then compute the misses and store them with a started put batch.
!
!   mpifort surrogate-f08.f90 $(pkg-config --cflags --libs mpikvs-fortran) -o surrogate-f08
!   mpirun -np 4 ./surrogate-f08 PREFIX/share/doc/mpikvs/examples/chemistry.json
!
! The table "chemistry" of the example chemistry.json: ten real(real64)
! inputs, rounded to a key whose size is the handle's (never assume it),
! and 13 real(real64) results.  Key c is the column keys(:, c).  Until
! mpikvs_wait (or an mpikvs_test that says done) the keys, values and
! status of a started batch belong to the library: they are ASYNCHRONOUS
! and contiguous, and are not touched.  Rank 0 prints the job's hit rate.
program surrogate_f08
  use, intrinsic :: iso_fortran_env, only: int8, int64, real64, error_unit
  use mpi_f08
  use mpikvs
  implicit none

  integer, parameter :: NIN = 10, NOUT = 13, NCELLS = 500, NSTEPS = 10
  real(real64) :: in(NIN, NCELLS), new_out(NOUT, NCELLS)
  real(real64), asynchronous :: out(NOUT, NCELLS)
  integer, asynchronous :: status(NCELLS)
  integer(int8), allocatable, asynchronous :: keys(:, :), new_keys(:, :)
  type(mpikvs_t) :: kvs
  type(mpikvs_options) :: opt
  type(mpikvs_request) :: req
  type(mpikvs_stats) :: st
  integer(int64) :: polls = 0
  integer :: rank, rc, step, c, nnew, ks
  logical :: done
  real(real64) :: rate

  call MPI_Init()
  call MPI_Comm_rank(MPI_COMM_WORLD, rank)
  if (command_argument_count() > 0) call get_command_argument(1, opt%config)
  opt%table = 'chemistry'
  rc = mpikvs_open(MPI_COMM_WORLD, kvs, opt)
  if (rc /= MPIKVS_OK) then
     write (error_unit, '(4a)') 'surrogate-f08: mpikvs_open: ', &
          mpikvs_strerror(rc), ': ', mpikvs_last_error(kvs)
     call MPI_Finalize()
     stop 1
  end if
  ks = mpikvs_key_size(kvs)
  allocate(keys(ks, NCELLS), new_keys(ks, NCELLS))

  do step = 0, NSTEPS - 1
     nnew = 0
     do c = 1, NCELLS
        call inputs(rank, step, c - 1, in(:, c))
        rc = mpikvs_round_key(kvs, in(:, c), keys(:, c))
        if (rc /= MPIKVS_OK) call fail('mpikvs_round_key', rc)
     end do
     rc = mpikvs_get_batch_start(kvs, NCELLS, keys, out, status, req)
     if (rc /= MPIKVS_OK) call fail('mpikvs_get_batch_start', rc)
     ! Other work goes here, polling now and then.
     do
        polls = polls + 1
        rc = mpikvs_test(kvs, req, done)
        if (rc /= MPIKVS_OK .or. done) exit
     end do
     if (rc /= MPIKVS_OK) call fail('mpikvs_test', rc)  ! the batch's own

     do c = 1, NCELLS
        if (status(c) == MPIKVS_OK) cycle      ! a hit: out(:, c) is set
        nnew = nnew + 1
        call solve(in(:, c), new_out(:, nnew))
        new_keys(:, nnew) = keys(:, c)
     end do
     if (nnew > 0) then
        rc = mpikvs_put_batch_start(kvs, nnew, new_keys, new_out, req)
        if (rc == MPIKVS_OK) rc = mpikvs_wait(kvs, req)  ! work could go first
        if (rc /= MPIKVS_OK) call fail('mpikvs_put_batch_start/wait', rc)
     end if
     rc = mpikvs_fence(kvs)
     if (rc /= MPIKVS_OK) call fail('mpikvs_fence', rc)
  end do

  rc = mpikvs_stats(kvs, ior(MPIKVS_SCOPE_JOB, MPIKVS_SINCE_OPEN), st)
  if (rc /= MPIKVS_OK) call fail('mpikvs_stats', rc)
  if (rank == 0) then
     rate = 0
     if (st%gets > 0) rate = 100.0_real64 * real(st%hits, real64) / &
          real(st%gets, real64)
     write (*, '(a,i0,a,i0,a,f0.1,a,i0,a)') 'surrogate-f08: gets ', &
          st%gets, ', hits ', st%hits, ' (', rate, ' %), ', polls, &
          ' polls on rank 0'
  end if
  rc = mpikvs_close(kvs)
  if (rc /= MPIKVS_OK) write (error_unit, '(2a)') &
       'surrogate-f08: mpikvs_close: ', mpikvs_strerror(rc)
  call MPI_Finalize()
  if (rc /= MPIKVS_OK) stop 1

contains

  ! the inputs of cell c (from 0) at step: 50 states shared by the cells
  subroutine inputs(rank, step, c, x)
    integer, intent(in) :: rank, step, c
    real(real64), intent(out) :: x(NIN)
    integer :: state, f

    state = mod(c + step, 50)
    do f = 0, NIN - 2
       x(f + 1) = 1e-3_real64 * (1 + state) * (f + 1) * &
            (1 + 1e-9_real64 * rank)
    end do
    x(NIN) = 60.0_real64
  end subroutine inputs

  ! the expensive call the cache stands in for
  subroutine solve(x, y)
    real(real64), intent(in) :: x(NIN)
    real(real64), intent(out) :: y(NOUT)
    real(real64) :: c
    integer :: j

    do j = 0, NOUT - 1
       c = x(mod(j, NIN - 1) + 1)
       y(j + 1) = c / (1 + c * c) + 1e-3_real64 * j * x(NIN)
    end do
  end subroutine solve

  subroutine fail(call, rc)
    character(len=*), intent(in) :: call
    integer, intent(in) :: rc

    write (error_unit, '(5a)') 'surrogate-f08: ', call, ': ', &
         mpikvs_strerror(rc), ': ' // mpikvs_last_error(kvs)
    call MPI_Abort(MPI_COMM_WORLD, 1)
  end subroutine fail
end program surrogate_f08
