! bench_fortran.f90 - what the Fortran module costs per call: single gets
! of hit keys, 80-byte keys and 104-byte values (table chemistry's
! sizes), through the module and, in the same run, from C
! (bench_c.c); rank 0 prints both in ns per get and their difference.
!
!   mpirun -np 2 tests/fortran/bench_fortran [ITERS]
program bench_fortran
  use, intrinsic :: iso_fortran_env, only: int64, real64, error_unit
  use, intrinsic :: iso_c_binding, only: c_int, c_double
  use mpi_f08
  use mpikvs
  implicit none

  interface
     integer(c_int) function bench_c_gets(comm, nkeys, iters, repeats, ns) &
          bind(c, name='bench_c_gets')
       import :: c_int, c_double
       integer(c_int), value :: comm, nkeys, iters, repeats
       real(c_double), intent(out) :: ns
     end function bench_c_gets
  end interface

  integer, parameter :: NKEYS = 1000, REPEATS = 5
  integer(int64) :: key(10)                     ! 80 bytes
  real(real64) :: value(13)                     ! 104 bytes
  type(mpikvs_t) :: kvs
  type(mpikvs_options) :: opt
  integer :: rank, rc, r, it, iters
  character(len=32) :: arg
  real(real64) :: t, ns_f, ns_c

  call MPI_Init()
  call MPI_Comm_rank(MPI_COMM_WORLD, rank)
  iters = 1000000
  if (command_argument_count() > 0) then
     call get_command_argument(1, arg)
     read (arg, *) iters
  end if

  opt%key_size = 80
  opt%value_size = 104
  rc = mpikvs_open(MPI_COMM_WORLD, kvs, opt)
  if (rc /= MPIKVS_OK) call fail('mpikvs_open', rc)
  key = 0
  value = 7
  do it = 1, NKEYS
     key(1) = it
     rc = mpikvs_put(kvs, key, value)
     if (rc /= MPIKVS_OK) call fail('mpikvs_put', rc)
  end do
  rc = mpikvs_fence(kvs)
  ns_f = huge(ns_f)
  do r = 1, REPEATS
     t = MPI_Wtime()
     do it = 0, iters - 1
        key(1) = 1 + mod(it, NKEYS)
        rc = mpikvs_get(kvs, key, value)
        if (rc /= MPIKVS_OK) call fail('mpikvs_get', rc)
     end do
     ns_f = min(ns_f, (MPI_Wtime() - t) * 1e9_real64 / iters)
  end do
  rc = mpikvs_close(kvs)
  if (rc /= MPIKVS_OK) call fail('mpikvs_close', rc)

  rc = bench_c_gets(MPI_COMM_WORLD%MPI_VAL, NKEYS, iters, REPEATS, ns_c)
  if (rc /= MPIKVS_OK) call fail('bench_c_gets', rc)
  if (rank == 0) write (*, '(a,i0,a,f0.1,a,f0.1,a,f0.1,a)') &
       'bench_fortran: single gets of hit keys, 80/104 B, best of 5 x ', &
       iters, ': fortran ', ns_f, ' ns/get, C ', ns_c, ' ns/get, overhead ', &
       ns_f - ns_c, ' ns/call'
  call MPI_Finalize()

contains

  subroutine fail(call, rc)
    character(len=*), intent(in) :: call
    integer, intent(in) :: rc

    write (error_unit, '(4a)') 'bench_fortran: ', call, ': ', &
         mpikvs_strerror(rc) // ': ' // mpikvs_last_error(kvs)
    call MPI_Abort(MPI_COMM_WORLD, 1)
  end subroutine fail
end program bench_fortran
